package clickhousestore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/store"
)

var _ store.DedupReporter = (*Store)(nil)

// dedupTokenSupported reports whether the server has the insert_deduplication_token setting
// (ClickHouse 22.2 and later).
func (p *pool) dedupTokenSupported() bool {
	return p.major > 22 || p.major == 22 && p.minor >= 2
}

// withDedupToken returns ctx carrying b.DedupToken as the insert_deduplication_token setting
// when the batch has one and the server supports it; otherwise ctx unchanged (an older server
// would reject the unknown setting).
func (p *pool) withDedupToken(ctx context.Context, b store.Batch) context.Context {
	if b.DedupToken == "" || !p.dedupTokenSupported() {
		return ctx
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_deduplication_token": b.DedupToken}))
}

// InsertDeduplicated implements store.DedupReporter: the table keeps a deduplication log — a
// Replicated* engine, or, where the server honours tokens (22.2 and later), a MergeTree with
// non_replicated_deduplication_window > 0. A server without tokens (18.16) deduplicates a
// Replicated table by the checksum of each block's content instead, which catches an in-doubt
// batch because the writer rebuilds it identically (tests in cluster_test.go and tests/chaos).
func (s *Store) InsertDeduplicated(ctx context.Context, target store.Target, table string) (bool, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return false, err
	}
	var engine, create string
	err = p.conn.QueryRow(ctx, "SELECT engine, create_table_query FROM system.tables WHERE database = ? AND name = ?",
		target.Database, table).Scan(&engine, &create)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, s.missing(ctx, p, target, table)
		}
		return false, translate(err, store.OpSchema)
	}
	if !p.dedupTokenSupported() && !strings.HasPrefix(engine, "Replicated") {
		return false, nil
	}
	return store.TableDeduplicates(engine, create), nil
}
