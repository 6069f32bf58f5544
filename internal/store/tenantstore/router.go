// Package tenantstore routes store calls by tenant: a tenant whose settings name its own
// ClickHouse server gets a store (and so connection pools) of its own, every other tenant uses
// the default store. The routing follows settings reloads without a restart.
//
// # Semantics
//
// Apply makes a settings snapshot current: it opens a store for every tenant whose ClickHouse
// target is new or changed and retires the stores of tenants that were removed or changed.
// Opening never dials (the backends connect on first use), so an unreachable tenant server
// fails only that tenant's calls. A retired store is closed after a grace period, so calls
// already holding it finish.
//
// # Errors
//
// Calls return the routed store's errors unchanged; after Close they return store.ErrClosed.
package tenantstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Opener returns a store for a tenant's own ClickHouse server. It must not dial.
type Opener func(tenant string, t settings.Target) (store.Store, error)

// retireGrace is how long a replaced store stays open for calls already using it.
const retireGrace = 30 * time.Second

// Router is a store.Store that routes each call by its target's tenant.
type Router struct {
	def  store.Store
	open Opener
	log  *slog.Logger

	mu     sync.RWMutex
	own    map[string]*owned
	closed bool
	// retired are replaced stores waiting for their grace period to end; Close closes them early.
	retired []store.Store
}

// owned is a tenant's own store and the target it was opened for.
type owned struct {
	target settings.Target
	st     store.Store
}

var (
	_ store.Store              = (*Router)(nil)
	_ store.CapabilityReporter = (*Router)(nil)
	_ store.DedupReporter      = (*Router)(nil)
)

// New returns a router over the default store def; open creates tenants' own stores.
func New(def store.Store, open Opener, log *slog.Logger) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Router{def: def, open: open, log: log, own: map[string]*owned{}}
}

// Apply makes snap's tenant targets current. A tenant whose store cannot be opened keeps
// routing to its previous store (or the default) and is reported in the returned error.
func (r *Router) Apply(snap *settings.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return store.ErrClosed
	}
	var errs []error
	want := map[string]settings.Target{}
	for _, name := range snap.TenantNames() {
		t, _ := snap.Tenant(name)
		if t.ClickHouse != nil {
			want[name] = *t.ClickHouse
		}
	}
	for name, o := range r.own {
		if w, ok := want[name]; !ok || !sameTarget(w, o.target) {
			delete(r.own, name)
			r.retire(name, o.st)
		}
	}
	for name, w := range want {
		if _, ok := r.own[name]; ok {
			continue
		}
		st, err := r.open(name, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", name, err))
			continue
		}
		r.own[name] = &owned{target: w, st: st}
		r.log.Info("tenant store opened", "tenant", name, "addrs", w.Addrs)
	}
	return errors.Join(errs...)
}

// retire closes st after the grace period; r.mu is held.
func (r *Router) retire(tenant string, st store.Store) {
	r.log.Info("tenant store retired", "tenant", tenant)
	r.retired = append(r.retired, st)
	time.AfterFunc(retireGrace, func() { _ = st.Close(context.Background()) }) // Close is idempotent
}

func sameTarget(a, b settings.Target) bool {
	return slices.Equal(a.Addrs, b.Addrs) && a.User == b.User && a.PasswordFile == b.PasswordFile
}

// pick returns the store of tenant.
func (r *Router) pick(tenant string) (store.Store, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, store.ErrClosed
	}
	if o, ok := r.own[tenant]; ok {
		return o.st, nil
	}
	return r.def, nil
}

// Columns implements store.SchemaReader.
func (r *Router) Columns(ctx context.Context, target store.Target, table string) ([]store.Column, error) {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return nil, err
	}
	return s.Columns(ctx, target, table)
}

// Insert implements store.Inserter.
func (r *Router) Insert(ctx context.Context, b store.Batch) error {
	s, err := r.pick(b.Target.Tenant)
	if err != nil {
		return err
	}
	return s.Insert(ctx, b)
}

// Query implements store.Querier.
func (r *Router) Query(ctx context.Context, target store.Target, q store.Query) (store.Rows, error) {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return nil, err
	}
	return s.Query(ctx, target, q)
}

// Exec implements store.Execer.
func (r *Router) Exec(ctx context.Context, target store.Target, sql string) error {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return err
	}
	return s.Exec(ctx, target, sql)
}

// Ping implements store.Pinger.
func (r *Router) Ping(ctx context.Context, target store.Target) error {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return err
	}
	return s.Ping(ctx, target)
}

// Capabilities implements store.CapabilityReporter for routed stores that report them; others
// report the 18.16 baseline.
func (r *Router) Capabilities(ctx context.Context, target store.Target) (store.Capabilities, error) {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return store.Capabilities{}, err
	}
	if c, ok := s.(store.CapabilityReporter); ok {
		return c.Capabilities(ctx, target)
	}
	return store.Capabilities{}, nil
}

// InsertDeduplicated implements store.DedupReporter for routed stores that report it; inserts
// into other stores are not known to be deduplicated.
func (r *Router) InsertDeduplicated(ctx context.Context, target store.Target, table string) (bool, error) {
	s, err := r.pick(target.Tenant)
	if err != nil {
		return false, err
	}
	if d, ok := s.(store.DedupReporter); ok {
		return d.InsertDeduplicated(ctx, target, table)
	}
	return false, nil
}

// Close closes the default store and every tenant store. It is idempotent.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	own, retired := r.own, r.retired
	r.own, r.retired = nil, nil
	r.mu.Unlock()
	var errs []error
	for _, o := range own {
		errs = append(errs, o.st.Close(ctx))
	}
	for _, st := range retired {
		errs = append(errs, st.Close(ctx))
	}
	errs = append(errs, r.def.Close(ctx))
	return errors.Join(errs...)
}
