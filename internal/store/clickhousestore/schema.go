package clickhousestore

import (
	"context"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/store"
)

// Columns reads the table's columns from system.columns in table order (18.16 has no
// position column; the result order is the table order).
func (s *Store) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return nil, err
	}
	rows, err := p.conn.Query(ctx,
		"SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = ? AND table = ?",
		target.Database, table)
	if err != nil {
		return nil, translate(err, store.OpSchema)
	}
	defer rows.Close()
	var cols []store.Column
	for rows.Next() {
		var name, typ, kind, expr string
		if err := rows.Scan(&name, &typ, &kind, &expr); err != nil {
			return nil, translate(err, store.OpSchema)
		}
		cols = append(cols, store.NewColumn(name, typ, kind, expr))
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, store.OpSchema)
	}
	if len(cols) == 0 {
		return nil, s.missing(ctx, p, target, table)
	}
	return cols, nil
}

// missing tells an unknown database from an unknown table.
func (s *Store) missing(ctx context.Context, p *pool, target store.Target, table string) error {
	var n uint64
	if err := p.conn.QueryRow(ctx, "SELECT count() FROM system.databases WHERE name = ?", target.Database).Scan(&n); err != nil {
		return translate(err, store.OpSchema)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", store.ErrUnknownDatabase, target.Database)
	}
	return fmt.Errorf("%w: %s.%s", store.ErrUnknownTable, target.Database, table)
}

// Exec runs a statement that returns no rows with target.Database as the current database.
func (s *Store) Exec(ctx context.Context, target store.Target, sql string) error {
	p, err := s.pool(ctx, target)
	if err != nil {
		return err
	}
	return translate(p.conn.Exec(ctx, sql), store.OpQuery)
}
