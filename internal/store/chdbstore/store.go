// Package chdbstore is the embedded store backend (store.backend: chdb): the ClickHouse engine
// running inside the process through libchdb, so a laptop needs no server.
//
// The engine is a process-wide singleton, so a process has at most one Store; tenants are
// databases inside it. The engine runs one statement at a time here: every call takes the
// engine in turn, and a streamed query result holds it until it is read to the end or closed
// (close Rows promptly). Inserts go in as JSONCompactEachRow text, which is exactly the
// canonical row encoding, so rows are inserted verbatim.
package chdbstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Deps are the collaborators of the store.
type Deps struct {
	// Logger receives engine events; nil discards them.
	Logger *slog.Logger
}

// Store is a store.Store on the embedded engine.
type Store struct {
	cfg Config
	log *slog.Logger
	l   *lib

	// sem is the engine turn: a one-slot semaphore so waiting respects contexts.
	sem    chan struct{}
	c      *conn
	closed bool
}

var (
	_ store.Store              = (*Store)(nil)
	_ store.CapabilityReporter = (*Store)(nil)
)

// New validates cfg, loads libchdb and claims the process's engine. A missing library is an
// error saying how to get it. The engine itself starts on first use.
func New(cfg Config, deps Deps) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	path, err := cfg.libPath()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	engine.mu.Lock()
	defer engine.mu.Unlock()
	if engine.open {
		return nil, fmt.Errorf("%w: %w", store.ErrUnavailable, errEngineInUse)
	}
	l, err := loadLib(path)
	if err != nil {
		return nil, fmt.Errorf("%w: load %s: %w", store.ErrUnavailable, path, err)
	}
	engine.open = true
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.LibPath = path
	return &Store{cfg: cfg, log: log, l: l, sem: make(chan struct{}, 1)}, nil
}

// acquire takes the engine turn and starts the engine on first use.
func (s *Store) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.closed {
		s.release()
		return store.ErrClosed
	}
	if s.c == nil {
		if err := os.MkdirAll(s.cfg.Path, 0o755); err != nil {
			s.release()
			return fmt.Errorf("%w: create %s: %w", store.ErrUnavailable, s.cfg.Path, err)
		}
		s.removeSpoolFiles()
		c, err := openConn(s.l, s.cfg.engineArgs())
		if err != nil {
			s.release()
			return fmt.Errorf("%w: start engine: %w", store.ErrUnavailable, err)
		}
		s.c = c
		s.log.Info("chdb engine started", "path", s.cfg.Path, "lib", s.cfg.LibPath, "max_memory_bytes", s.cfg.maxMemory())
	}
	return nil
}

func (s *Store) release() { <-s.sem }

// run executes one statement while holding the turn and returns a copy of its output.
func (s *Store) run(sql, format string, op store.Op) ([]byte, error) {
	r := result{l: s.l, p: s.l.query(s.c.c, sql, format)}
	defer r.free()
	if msg := r.err(); msg != "" {
		if op == store.OpInsert {
			return nil, insertError(msg)
		}
		return nil, engineError(msg, op)
	}
	return append([]byte(nil), r.buf()...), nil
}

// use makes database the current one, for unqualified names.
func (s *Store) use(database string, op store.Op) error {
	_, err := s.run("USE "+sqlbind.QuoteIdent(database), "CSV", op)
	return err
}

// do runs fn with the engine turn held, checking the context first.
func (s *Store) do(ctx context.Context, fn func() error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn()
}

// Ping runs SELECT 1 on the engine.
func (s *Store) Ping(ctx context.Context, _ store.Target) error {
	return s.do(ctx, func() error {
		_, err := s.run("SELECT 1", "CSV", store.OpQuery)
		return err
	})
}

// Capabilities reports the embedded engine's abilities: every modern type; parameters are bound
// on the client.
func (s *Store) Capabilities(context.Context, store.Target) (store.Capabilities, error) {
	return store.Capabilities{ModernTypes: true, InsertDedupToken: true}, nil
}

// Exec runs sql with target.Database as the current database.
func (s *Store) Exec(ctx context.Context, target store.Target, sql string) error {
	return s.do(ctx, func() error {
		if err := s.use(target.Database, store.OpQuery); err != nil {
			return err
		}
		_, err := s.run(sql, "CSV", store.OpQuery)
		return err
	})
}

// Columns reads the table's columns from system.columns in table order.
func (s *Store) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	var out []byte
	err := s.do(ctx, func() error {
		var err error
		out, err = s.run(fmt.Sprintf(
			"SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = %s AND table = %s ORDER BY position",
			sqlbind.Quote(target.Database), sqlbind.Quote(table)), "JSONCompactEachRow", store.OpSchema)
		if err != nil || len(out) > 0 {
			return err
		}
		n, err := s.run("SELECT count() FROM system.databases WHERE name = "+sqlbind.Quote(target.Database), "CSV", store.OpSchema)
		if err != nil {
			return err
		}
		if string(n) == "0\n" {
			return fmt.Errorf("%w: %s", store.ErrUnknownDatabase, target.Database)
		}
		return fmt.Errorf("%w: %s.%s", store.ErrUnknownTable, target.Database, table)
	})
	if err != nil {
		return nil, err
	}
	var cols []store.Column
	for _, line := range splitLines(out) {
		var f [4]string
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("store: decode system.columns row: %w", err)
		}
		cols = append(cols, store.NewColumn(f[0], f[1], f[2], f[3]))
	}
	return cols, nil
}

// Close stops the engine and gives the process's engine slot back. It is idempotent.
func (s *Store) Close(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer s.release()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.c != nil {
		s.c.close()
		s.c = nil
	}
	engine.mu.Lock()
	engine.open = false
	engine.mu.Unlock()
	return nil
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}
