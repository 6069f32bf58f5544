package clickhousestore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Deduplication mechanisms reported at boot per table.
const (
	DedupToken    = "insert_deduplication_token"
	DedupChecksum = "replicated block checksum (a redelivered batch is rebuilt byte-identically)"
	DedupNone     = "none: a batch in doubt after a crash is inserted again (at least once)"
)

// TableReport says how inserts into one table are routed and deduplicated.
type TableReport struct {
	Table, Engine string
	// Local is the local table of a Distributed table (database.table), empty otherwise.
	Local string
	// Insert is "distributed", "local" (rows routed by ShardingKey) or "direct".
	Insert      string
	ShardingKey string
	// Dedup is DedupToken, DedupChecksum or DedupNone.
	Dedup string
	// Problem is why insert mode local cannot route this table itself, empty when it can.
	Problem string
}

// Report lists the MergeTree and Distributed tables of target.Database with how inserts reach
// them and which mechanism keeps a redelivered batch from being stored twice. In insert mode
// local, a Distributed table over the cluster whose sharding key the gateway cannot evaluate is
// an error wrapping store.ErrRejected that names the table and the key.
func (s *Store) Report(ctx context.Context, target store.Target) ([]TableReport, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return nil, err
	}
	rows, err := p.conn.Query(ctx, "SELECT name, engine FROM system.tables WHERE database = ? AND (engine LIKE '%MergeTree' OR engine = 'Distributed') ORDER BY name", target.Database)
	if err != nil {
		return nil, translate(err, store.OpSchema)
	}
	var out []TableReport
	for rows.Next() {
		var r TableReport
		if err := rows.Scan(&r.Table, &r.Engine); err != nil {
			rows.Close()
			return nil, translate(err, store.OpSchema)
		}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err, store.OpSchema)
	}
	var errs []error
	c := s.clusterFor(target)
	for i := range out {
		r := &out[i]
		r.Insert = "direct"
		dedup, err := s.InsertDeduplicated(ctx, target, r.Table)
		if err != nil {
			return nil, err
		}
		engine, _, err := s.localEngine(ctx, p, target, r.Table)
		if err != nil {
			return nil, err
		}
		switch {
		case !dedup:
			r.Dedup = DedupNone
		case p.dedupTokenSupported():
			r.Dedup = DedupToken
		case strings.HasPrefix(engine, "Replicated"):
			r.Dedup = DedupChecksum
		}
		if r.Engine != "Distributed" || c == nil {
			continue
		}
		rt, err := s.route(ctx, c, target, r.Table)
		if err != nil {
			return nil, err
		}
		r.Local, r.ShardingKey, r.Insert = rt.dist.Database+"."+rt.dist.Table, rt.dist.ShardingKey, InsertDistributed
		if rt.key != nil {
			r.Insert = InsertLocal
		}
		r.Problem = rt.fallback
		if c.cfg.Insert == InsertLocal && rt.fallback != "" && rt.dist.Cluster == c.cfg.Name {
			errs = append(errs, fmt.Errorf("%w: store.clickhouse.cluster.insert is local but table %s.%s cannot be routed by the gateway: %s; "+
				"use insert: distributed or a sharding key of a plain integer column, intHash64(column) or cityHash64(columns)",
				store.ErrRejected, target.Database, r.Table, rt.fallback))
		}
	}
	return out, errors.Join(errs...)
}
