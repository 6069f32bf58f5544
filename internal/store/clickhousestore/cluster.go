package clickhousestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore/sharding"
)

// cluster is the default endpoint as shards of replicas (Config.Cluster): where local-mode
// inserts go, each replica behind its own breaker, and the insert route of each table.
type cluster struct {
	cfg    Cluster
	shards [][]*replica

	mu     sync.Mutex
	routes map[routeKey]*route
}

// replica is one server of a shard.
type replica struct {
	addr string
	br   *breaker.Breaker
}

type routeKey struct{ database, table string }

// routeTTL is how long a table's route is trusted before system.tables is read again (a table
// may be dropped and created over another local table or key).
const routeTTL = time.Minute

// route is how the rows of one table reach the cluster.
type route struct {
	// distributed is true for a Distributed table; false for any other table, inserted as is.
	distributed bool
	dist        sharding.Distributed
	// key and sel route rows to the shards' local tables (insert mode local); key is nil when
	// the rows go through the Distributed table, fallback says why in local mode.
	key      *sharding.Key
	sel      sharding.Selector
	fallback string
	at       time.Time
}

func newCluster(cfg Cluster, deps Deps) (*cluster, error) {
	c := &cluster{cfg: cfg, routes: map[routeKey]*route{}}
	for i, addrs := range cfg.Shards {
		var shard []*replica
		for _, a := range addrs {
			br, err := breaker.New(breaker.Config{Failures: cfg.ReplicaBreakerFailures, Cooldown: cfg.ReplicaBreakerCooldown},
				breaker.Deps{Metrics: deps.Breakers, Component: "clickhouse_replica", Target: a})
			if err != nil {
				return nil, fmt.Errorf("clickhousestore: shard %d replica %s: %w", i+1, a, err)
			}
			shard = append(shard, &replica{addr: a, br: br})
		}
		c.shards = append(c.shards, shard)
	}
	return c, nil
}

// clusterFor returns the cluster behind target, nil when the target is a single server (no
// cluster configured, or a tenant with its own endpoint).
func (s *Store) clusterFor(target store.Target) *cluster {
	if s.cluster == nil {
		return nil
	}
	if _, own := s.cfg.Tenants[target.Tenant]; own {
		return nil
	}
	return s.cluster
}

// route returns the table's route, reading it from the server when unknown or stale.
func (s *Store) route(ctx context.Context, c *cluster, target store.Target, table string) (*route, error) {
	k := routeKey{target.Database, table}
	c.mu.Lock()
	rt, ok := c.routes[k]
	c.mu.Unlock()
	if ok && time.Since(rt.at) < routeTTL {
		return rt, nil
	}
	old := rt
	rt, err := s.resolve(ctx, c, target, table)
	if err != nil {
		return nil, err
	}
	if rt.fallback != "" && (!ok || rt.fallback != old.fallback) {
		s.log.Warn("insert mode local: this table's rows go through its Distributed table", "database", target.Database,
			"table", table, "reason", rt.fallback)
	}
	c.mu.Lock()
	c.routes[k] = rt
	c.mu.Unlock()
	return rt, nil
}

// forget drops a table's route, so that the next insert reads it again.
func (c *cluster) forget(target store.Target, table string) {
	c.mu.Lock()
	delete(c.routes, routeKey{target.Database, table})
	c.mu.Unlock()
}

// resolve reads the table's engine: a Distributed table over the configured cluster names its
// local table and sharding key; in insert mode local the key is parsed against the table's
// columns and the shard weights are read from system.clusters.
func (s *Store) resolve(ctx context.Context, c *cluster, target store.Target, table string) (*route, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return nil, err
	}
	engine, create, err := s.tableEngine(ctx, p, target, table)
	if err != nil {
		return nil, err
	}
	rt := &route{at: time.Now()}
	if engine != "Distributed" {
		return rt, nil
	}
	rt.distributed = true
	if rt.dist, err = sharding.ParseDistributed(create); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %w", store.ErrRejected, target.Database, table, err)
	}
	if rt.dist.Database == "" || strings.HasPrefix(rt.dist.Database, "currentDatabase") {
		rt.dist.Database = target.Database
	}
	if c.cfg.Insert != InsertLocal {
		return rt, nil
	}
	if rt.dist.Cluster != c.cfg.Name {
		rt.fallback = fmt.Sprintf("its cluster %s is not store.clickhouse.cluster.name %s", rt.dist.Cluster, c.cfg.Name)
		return rt, nil
	}
	weights, err := s.shardWeights(ctx, p, c)
	if err != nil {
		return nil, err
	}
	rt.sel = sharding.NewSelector(weights)
	if rt.dist.ShardingKey == "" {
		rt.fallback = "it has no sharding key"
		return rt, nil
	}
	cols, err := s.Columns(ctx, target, table)
	if err != nil {
		return nil, err
	}
	rt.key, err = sharding.Parse(rt.dist.ShardingKey, func(name string) (string, bool) {
		for _, col := range cols {
			if col.Name == name {
				return col.TypeName, true
			}
		}
		return "", false
	})
	if err != nil {
		rt.fallback = err.Error()
	}
	return rt, nil
}

// tableEngine reads a table's engine and create_table_query.
func (s *Store) tableEngine(ctx context.Context, p *pool, target store.Target, table string) (engine, create string, err error) {
	err = p.conn.QueryRow(ctx, "SELECT engine, create_table_query FROM system.tables WHERE database = ? AND name = ?",
		target.Database, table).Scan(&engine, &create)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", s.missing(ctx, p, target, table)
	}
	if err != nil {
		return "", "", translate(err, store.OpSchema)
	}
	return engine, create, nil
}

// shardWeights reads the weight of each shard of the cluster from the server's remote_servers
// and checks that it has as many shards as store.clickhouse.cluster.shards lists.
func (s *Store) shardWeights(ctx context.Context, p *pool, c *cluster) ([]uint64, error) {
	rows, err := p.conn.Query(ctx, "SELECT shard_num, any(shard_weight) FROM system.clusters WHERE cluster = ? GROUP BY shard_num ORDER BY shard_num", c.cfg.Name)
	if err != nil {
		return nil, translate(err, store.OpSchema)
	}
	defer rows.Close()
	var weights []uint64
	for rows.Next() {
		var num, w uint32
		if err := rows.Scan(&num, &w); err != nil {
			return nil, translate(err, store.OpSchema)
		}
		weights = append(weights, uint64(w))
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, store.OpSchema)
	}
	if len(weights) != len(c.shards) {
		return nil, fmt.Errorf("%w: cluster %s has %d shards in the server's remote_servers, store.clickhouse.cluster.shards lists %d",
			store.ErrRejected, c.cfg.Name, len(weights), len(c.shards))
	}
	return weights, nil
}
