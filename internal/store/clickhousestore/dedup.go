package clickhousestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore/sharding"
)

var _ store.DedupReporter = (*Store)(nil)

// dedupTokenSupported reports whether the server has the insert_deduplication_token setting
// (ClickHouse 22.2 and later).
func (p *pool) dedupTokenSupported() bool {
	return p.major > 22 || p.major == 22 && p.minor >= 2
}

// withSettings returns ctx carrying settings and b.DedupToken as the insert_deduplication_token
// setting when the batch has one and the server supports it (an older server would reject the
// unknown setting); ctx unchanged when there is nothing to send.
func (p *pool) withSettings(ctx context.Context, b store.Batch, settings clickhouse.Settings) context.Context {
	token := b.DedupToken != "" && p.dedupTokenSupported()
	if !token && len(settings) == 0 {
		return ctx
	}
	all := clickhouse.Settings{}
	for k, v := range settings {
		all[k] = v
	}
	if token {
		all["insert_deduplication_token"] = b.DedupToken
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(all))
}

// InsertDeduplicated implements store.DedupReporter: the table keeps a deduplication log — a
// Replicated* engine, or, where the server honours tokens (22.2 and later), a MergeTree with
// non_replicated_deduplication_window > 0. A server without tokens (18.16) deduplicates a
// Replicated table by the checksum of each block's content instead, which catches an in-doubt
// batch because the writer rebuilds it identically (tests in cluster_test.go and tests/chaos).
//
// A Distributed table deduplicates as its local table does: the answer is the local table's.
func (s *Store) InsertDeduplicated(ctx context.Context, target store.Target, table string) (bool, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return false, err
	}
	engine, create, err := s.localEngine(ctx, p, target, table)
	if err != nil {
		return false, err
	}
	if !p.dedupTokenSupported() && !strings.HasPrefix(engine, "Replicated") {
		return false, nil
	}
	return store.TableDeduplicates(engine, create), nil
}

// localEngine returns the engine and create_table_query of the table, or of its local table
// when it is a Distributed table.
func (s *Store) localEngine(ctx context.Context, p *pool, target store.Target, table string) (engine, create string, err error) {
	engine, create, err = s.tableEngine(ctx, p, target, table)
	if err != nil || engine != "Distributed" {
		return engine, create, err
	}
	d, err := sharding.ParseDistributed(create)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s.%s: %w", store.ErrRejected, target.Database, table, err)
	}
	local := target
	if d.Database != "" && !strings.HasPrefix(d.Database, "currentDatabase") {
		local.Database = d.Database
	}
	return s.tableEngine(ctx, p, local, d.Table)
}
