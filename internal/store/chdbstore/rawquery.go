package chdbstore

import (
	"context"

	"github.com/wavehouse/wavehouse/internal/store"
)

// QueryFormat runs sql in target.Database's context and returns the engine's own output in the
// named ClickHouse format, unchanged. The gateway's query path never uses it (it reads canonical
// rows through Query); it lets tests compare the gateway's ClickHouse output formats with the
// engine's byte for byte.
func (s *Store) QueryFormat(ctx context.Context, target store.Target, sql, format string) ([]byte, error) {
	var out []byte
	err := s.do(ctx, func() error {
		if err := s.use(target.Database, store.OpQuery); err != nil {
			return err
		}
		var err error
		out, err = s.run(sql, format, store.OpQuery)
		return err
	})
	return out, err
}
