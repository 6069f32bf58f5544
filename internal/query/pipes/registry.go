package pipes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
)

// Set is an immutable collection of pipes keyed by name.
type Set struct {
	pipes map[string]*Pipe
	names []string
}

// NewSet returns a set of the given pipes; a duplicate name is an error.
func NewSet(pipes ...*Pipe) (*Set, error) {
	s := &Set{pipes: make(map[string]*Pipe, len(pipes))}
	for _, p := range pipes {
		if _, dup := s.pipes[p.Name]; dup {
			return nil, fmt.Errorf("%w: pipe %s defined twice", ErrInvalid, p.Name)
		}
		s.pipes[p.Name] = p
		s.names = append(s.names, p.Name)
	}
	sort.Strings(s.names)
	return s, nil
}

// Get returns the pipe called name.
func (s *Set) Get(name string) (*Pipe, bool) {
	if s == nil {
		return nil, false
	}
	p, ok := s.pipes[name]
	return p, ok
}

// All returns the pipes sorted by name.
func (s *Set) All() []*Pipe {
	if s == nil {
		return nil
	}
	out := make([]*Pipe, len(s.names))
	for i, n := range s.names {
		out[i] = s.pipes[n]
	}
	return out
}

// Len is the number of pipes.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.pipes)
}

// Load reads every *.sql file directly in dir into a set. A directory that does not exist is
// an empty set. Every problem of every file is reported at once, each naming the file.
func Load(dir string) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return NewSet()
	}
	if err != nil {
		return nil, fmt.Errorf("pipes: read %s: %w", dir, err)
	}
	var pipes []*Pipe
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		src, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("pipes: %w", err))
			continue
		}
		p, err := Parse(strings.TrimSuffix(e.Name(), ".sql"), string(src))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		pipes = append(pipes, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return NewSet(pipes...)
}

// Registry holds the current set of pipes. Reload swaps the set atomically: a request that
// already looked a pipe up keeps it, later lookups see the new set. It is safe for concurrent
// use; the zero value holds no pipes.
type Registry struct {
	dir string
	cur atomic.Pointer[Set]
}

// NewRegistry returns a registry over dir, loaded once. It fails when the directory does not
// load; Reload keeps the previous set in that case.
func NewRegistry(dir string) (*Registry, error) {
	r := &Registry{dir: dir}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the directory again and, when it loads without error, makes it current. On
// error the previous set stays current.
func (r *Registry) Reload() error {
	s, err := Load(r.dir)
	if err != nil {
		return err
	}
	r.cur.Store(s)
	return nil
}

// Swap makes s current (for a settings loader that parsed the pipes itself).
func (r *Registry) Swap(s *Set) { r.cur.Store(s) }

// Current returns the current set.
func (r *Registry) Current() *Set { return r.cur.Load() }

// Pipes returns the current set for tenant. One registry serves one directory, so every
// tenant sees the same set; a per-tenant source implements [Source] itself.
func (r *Registry) Pipes(string) *Set { return r.cur.Load() }
