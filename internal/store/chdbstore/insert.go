package chdbstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Insert writes the batch as one INSERT … FORMAT JSONCompactEachRow statement whose data are
// the canonical rows, one per line. Date-times without a zone are read as UTC, as canonical
// values are written.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: batch has no columns", store.ErrRejected)
	}
	var q strings.Builder
	q.Grow(b.Bytes() + len(b.Rows) + 256)
	sqlbind.InsertInto(&q, b.Target.Database, b.Table, b.Columns)
	q.WriteString(" SETTINGS session_timezone = 'UTC', input_format_allow_errors_num = 0, input_format_skip_unknown_fields = 0, input_format_json_named_tuples_as_objects = 0")
	if b.DedupToken != "" {
		q.WriteString(", insert_deduplication_token = ")
		q.WriteString(sqlbind.Quote(b.DedupToken))
	}
	q.WriteString(" FORMAT JSONCompactEachRow\n")
	for i, r := range b.Rows {
		if bytes.ContainsAny(r, "\n\r") {
			// Canonical rows never contain raw newlines (strings are escaped); a row that does
			// would split into two.
			return &store.RowError{Row: i, Err: fmt.Errorf("%w: row contains a raw newline", store.ErrRejected)}
		}
		q.Write(r)
		q.WriteByte('\n')
	}
	sql := q.String()
	return s.do(ctx, func() error {
		_, err := s.run(sql, "CSV", store.OpInsert)
		return err
	})
}
