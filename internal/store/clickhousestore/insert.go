package clickhousestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
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
// sent at once; a cluster target shards canonical rows in the gateway (clusterinsert.go). A
// value that cannot be converted aborts the batch with store.ErrRejected and a
// *store.RowError naming the row and column.
func (s *Store) Insert(ctx context.Context, b store.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: batch has no columns", store.ErrRejected)
	}
	if c := s.clusterFor(b.Target); c != nil {
		// Sharding in the gateway splits a batch by the rows' key values, which it reads from
		// canonical rows; RowBinary batches are rendered for it first.
		if err := s.toCanonical(&b); err != nil {
			return err
		}
		return s.insertCluster(ctx, c, b)
	}
	p, err := s.pool(ctx, b.Target)
	if err != nil {
		return err
	}
	if len(b.RowBinary) > 0 && p.http != nil {
		same, err := s.typesMatch(ctx, b)
		if err != nil {
			return err
		}
		if same {
			return p.http.insert(ctx, b, p.dedupTokenSupported())
		}
	}
	if err := s.toCanonical(&b); err != nil {
		return err
	}
	return s.insertInto(ctx, p, b, nil)
}

// toCanonical replaces the RowBinary rows of b, if any, by canonical rows.
func (s *Store) toCanonical(b *store.Batch) error {
	if len(b.RowBinary) == 0 {
		return nil
	}
	rows, err := s.canonicalRows(*b)
	if err != nil {
		return err
	}
	b.Rows, b.RowBinary, b.Count = rows, nil, 0
	return nil
}

// insertInto sends b (canonical rows) as one native INSERT on p, with these settings (and the
// batch's deduplication token where the server has it).
func (s *Store) insertInto(ctx context.Context, p *pool, b store.Batch, settings clickhouse.Settings) error {
	ctx = p.withSettings(ctx, b, settings)
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
