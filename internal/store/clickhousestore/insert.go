package clickhousestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Insert sends the batch as one native INSERT with an explicit column list (PrepareBatch): the
// server's header block gives the column types, each canonical value is converted for the
// driver, and the whole block is sent at once. A value that cannot be converted aborts the batch
// with store.ErrRejected and a *store.RowError naming the row and column.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: batch has no columns", store.ErrRejected)
	}
	p, err := s.pool(ctx, b.Target)
	if err != nil {
		return err
	}
	var q strings.Builder
	q.WriteString("INSERT INTO ")
	q.WriteString(sqlbind.QuoteIdent(b.Target.Database))
	q.WriteByte('.')
	q.WriteString(sqlbind.QuoteIdent(b.Table))
	q.WriteString(" (")
	for i, c := range b.Columns {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(sqlbind.QuoteIdent(c))
	}
	q.WriteByte(')')
	batch, err := p.conn.PrepareBatch(ctx, q.String())
	if err != nil {
		return translate(err, store.OpInsert)
	}
	defer func() { _ = batch.Abort() }()
	cols := batch.Columns()
	if len(cols) != len(b.Columns) {
		return fmt.Errorf("%w: server expects %d columns, batch has %d", store.ErrRejected, len(cols), len(b.Columns))
	}
	types := make([]*chtype.Type, len(cols))
	for i, c := range cols {
		types[i] = s.parseType(string(c.Type()))
	}
	if err := appendRows(batch, b, types); err != nil {
		return err
	}
	return translate(batch.Send(), store.OpInsert)
}

func appendRows(batch driver.Batch, b store.Batch, types []*chtype.Type) error {
	n := len(types)
	builders := make([]builder, n)
	for i, t := range types {
		builders[i] = newBuilder(t, len(b.Rows))
	}
	for ri, row := range b.Rows {
		ci := 0
		ok, err := chtype.SplitArray(row, func(i int, elem []byte) error {
			if i >= n {
				return fmt.Errorf("%w: more than %d values", store.ErrRejected, n)
			}
			if err := builders[i].add(elem); err != nil {
				return &store.RowError{Row: ri, Column: b.Columns[i], Err: fmt.Errorf("%w: %w", store.ErrRejected, err)}
			}
			ci = i + 1
			return nil
		})
		if err != nil {
			if _, isRow := err.(*store.RowError); isRow {
				return err
			}
			return &store.RowError{Row: ri, Err: err}
		}
		if !ok || ci != n {
			return &store.RowError{Row: ri, Err: fmt.Errorf("%w: row is not a JSON array of %d values", store.ErrRejected, n)}
		}
	}
	for i, bl := range builders {
		if err := bl.flush(batch.Column(i)); err != nil {
			return fmt.Errorf("%w: column %s: %w", store.ErrRejected, b.Columns[i], err)
		}
	}
	return nil
}
