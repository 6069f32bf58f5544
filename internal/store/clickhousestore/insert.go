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

// Insert sends the batch as one INSERT. RowBinary rows go over HTTP as they are when the
// endpoint names HTTP addresses (httpinsert.go) and the table's columns still have the types
// the rows were encoded in: the server reads RowBinary by the table's types, so rows queued
// before a column's type changed would be misread. Otherwise — canonical rows of a version 1
// backlog, or RowBinary rows without an HTTP address, rendered as canonical rows first — it is
// one native INSERT with an explicit column list (PrepareBatch): the server's header block gives
// the column types, each canonical value is converted for the driver, and the whole block is
// sent at once. A value that cannot be converted aborts the batch with store.ErrRejected and a
// *store.RowError naming the row and column.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: batch has no columns", store.ErrRejected)
	}
	p, err := s.pool(ctx, b.Target)
	if err != nil {
		return err
	}
	if len(b.RowBinary) > 0 {
		if p.http != nil {
			same, err := s.typesMatch(ctx, b)
			if err != nil {
				return err
			}
			if same {
				return p.http.insert(ctx, b, p.dedupTokenSupported())
			}
		}
		if b.Rows, err = s.canonicalRows(b); err != nil {
			return err
		}
	}
	ctx = p.withDedupToken(ctx, b)
	var q strings.Builder
	sqlbind.InsertInto(&q, b.Target.Database, b.Table, b.Columns)
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
	if err := s.appendRows(batch, b, types); err != nil {
		return err
	}
	return translate(batch.Send(), store.OpInsert)
}

// appendRows decodes the rows of b with a pooled decoder and hands each column to the batch in
// one piece. The decoder goes back to the pool only after the flush, because its strings may be
// views of the rows that the driver copies on Append.
func (s *Store) appendRows(batch driver.Batch, b store.Batch, types []*chtype.Type) error {
	d, key := s.decoders.get(types, len(b.Rows))
	defer s.decoders.put(key, d)
	if err := d.decode(b); err != nil {
		return err
	}
	for i, bl := range d.builders {
		if err := bl.flush(batch.Column(i)); err != nil {
			return fmt.Errorf("%w: column %s: %w", store.ErrRejected, b.Columns[i], err)
		}
	}
	return nil
}
