package chdbstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Insert writes the batch as one INSERT statement: RowBinary rows as they are, read by the
// engine from a spool file (insertRowBinary); canonical rows of a version 1 backlog as
// FORMAT JSONCompactEachRow text, one per line.
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
		return s.insertRowBinary(ctx, b, head.String())
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

// insertRowBinary inserts RowBinary rows through a file the engine reads with file(…,
// 'RowBinary', structure): data inline after FORMAT RowBinary is cut short by the engine's
// statement splitter at some byte sequences (a row holding 0x0a 0x0a lost the rest of the batch,
// sometimes without an error). The structure is the frame's column types, so the engine
// converts them to the table's types as a text insert would.
func (s *Store) insertRowBinary(ctx context.Context, b store.Batch, head string) error {
	f, err := os.CreateTemp(s.cfg.Path, spoolPattern)
	if err != nil {
		return fmt.Errorf("%w: insert spool file: %w", store.ErrUnavailable, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, werr := f.Write(b.RowBinary)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("%w: insert spool file: %w", store.ErrUnavailable, werr)
	}
	var structure strings.Builder
	for i, c := range b.Columns {
		if i > 0 {
			structure.WriteString(", ")
		}
		structure.WriteString(sqlbind.QuoteIdent(c))
		structure.WriteByte(' ')
		if i < len(b.Types) {
			structure.WriteString(b.Types[i])
		}
	}
	var q strings.Builder
	q.WriteString(head)
	if hasJSON(b.Types) {
		q.WriteString(", input_format_binary_read_json_as_string = 1")
	}
	q.WriteString(" SELECT * FROM file(")
	q.WriteString(sqlbind.Quote(f.Name()))
	q.WriteString(", 'RowBinary', ")
	q.WriteString(sqlbind.Quote(structure.String()))
	q.WriteString(")")
	sql := q.String()
	return s.do(ctx, func() error {
		_, err := s.run(sql, "CSV", store.OpInsert)
		return err
	})
}

// spoolPattern names insertRowBinary's spool files inside the engine path.
const spoolPattern = ".insert-*.rowbinary"

// removeSpoolFiles deletes the spool files a killed process left behind (each insert removes its
// own; a SIGKILL mid-insert cannot). The engine path belongs to this process alone, so no
// other insert can be using them.
func (s *Store) removeSpoolFiles() {
	left, _ := filepath.Glob(filepath.Join(s.cfg.Path, spoolPattern))
	for _, f := range left {
		if err := os.Remove(f); err != nil {
			s.log.Warn("chdb: remove a spool file left by an earlier process", "file", f, "err", err)
		}
	}
	if len(left) > 0 {
		s.log.Info("chdb: removed spool files left by an earlier process", "files", len(left))
	}
}

func hasJSON(types []string) bool {
	for _, name := range types {
		if t, err := chtype.Parse(name); err == nil && t.HasJSON() {
			return true
		}
	}
	return false
}
