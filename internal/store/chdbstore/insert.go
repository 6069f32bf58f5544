package chdbstore

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Insert writes the batch as one INSERT statement: RowBinary rows follow
// FORMAT RowBinary as they are (chdb_query_n takes the statement with its binary data);
// canonical rows of a version 1 backlog go as FORMAT JSONCompactEachRow text, one per line.
// Date-times without a zone are read as UTC, as canonical values are written.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: batch has no columns", store.ErrRejected)
	}
	var q bytes.Buffer
	q.Grow(b.Bytes() + len(b.Rows) + 256)
	var head strings.Builder
	sqlbind.InsertInto(&head, b.Target.Database, b.Table, b.Columns)
	head.WriteString(" SETTINGS session_timezone = 'UTC', input_format_allow_errors_num = 0, input_format_skip_unknown_fields = 0, input_format_json_named_tuples_as_objects = 0")
	if b.DedupToken != "" {
		head.WriteString(", insert_deduplication_token = ")
		head.WriteString(sqlbind.Quote(b.DedupToken))
	}
	if len(b.RowBinary) > 0 {
		if hasJSON(b.Types) {
			head.WriteString(", input_format_binary_read_json_as_string = 1")
		}
		// The engine starts reading data after the first newline following the format name.
		head.WriteString(" FORMAT RowBinary\n")
		q.WriteString(head.String())
		q.Write(b.RowBinary)
		return s.do(ctx, func() error { return s.runBytes(q.Bytes(), store.OpInsert) })
	}
	head.WriteString(" FORMAT JSONCompactEachRow\n")
	q.WriteString(head.String())
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

// runBytes runs a statement that may hold any bytes (binary insert data), passing its length.
func (s *Store) runBytes(stmt []byte, op store.Op) error {
	format := []byte("CSV")
	r := result{l: s.l, p: s.l.queryN(s.c.c, &stmt[0], uintptr(len(stmt)), &format[0], uintptr(len(format)))}
	runtime.KeepAlive(stmt)
	runtime.KeepAlive(format)
	defer r.free()
	if msg := r.err(); msg != "" {
		if op == store.OpInsert {
			return insertError(msg)
		}
		return engineError(msg, op)
	}
	return nil
}

func hasJSON(types []string) bool {
	for _, name := range types {
		if t, err := chtype.Parse(name); err == nil && t.HasJSON() {
			return true
		}
	}
	return false
}
