package chdbstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

var _ store.DedupReporter = (*Store)(nil)

// InsertDeduplicated implements store.DedupReporter: chDB honours insert_deduplication_token,
// so it depends on the table keeping a deduplication log (non_replicated_deduplication_window
// above 0 for a plain MergeTree).
func (s *Store) InsertDeduplicated(ctx context.Context, target store.Target, table string) (bool, error) {
	var out []byte
	err := s.do(ctx, func() error {
		var err error
		out, err = s.run(fmt.Sprintf("SELECT engine, create_table_query FROM system.tables WHERE database = %s AND name = %s",
			sqlbind.Quote(target.Database), sqlbind.Quote(table)), "JSONCompactEachRow", store.OpSchema)
		return err
	})
	if err != nil {
		return false, err
	}
	lines := splitLines(out)
	if len(lines) == 0 {
		return false, fmt.Errorf("%w: %s.%s", store.ErrUnknownTable, target.Database, table)
	}
	var f [2]string
	if err := json.Unmarshal(lines[0], &f); err != nil {
		return false, fmt.Errorf("store: decode system.tables row: %w", err)
	}
	return store.TableDeduplicates(f[0], f[1]), nil
}
