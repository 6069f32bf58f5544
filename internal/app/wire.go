package app

import (
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/ingest/commits"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/ops"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store/schemacache"
)

// access is the secure-default decision New made before wiring (CheckAccess).
type access struct {
	anonymous bool
	warning   string
}

// wiring is what wire built: every component by name, and the handles App keeps.
type wiring struct {
	comps map[string]Component
	opsLn *listener
	apiLn *listener
	queue mq.Queue
}

// wire builds the components the roles use. Each builder returns what it builds and takes what
// it needs as parameters, so the order below is the dependency order (the start order is
// startOrder's): the store first (the settings apply tenant stores to its router), then the
// settings (the queue reads tenant budgets from them), the queue, the schema cache over both, and
// the workers last. A layer a role does not use stays nil, and builders accept that.
func wire(e env, acc access, o options) (*wiring, error) {
	uses := e.cfg.Roles.Uses
	w := &wiring{comps: map[string]Component{}}
	w.opsLn = newListener(compOps, e.cfg.Ops.Listen,
		e.http.Instrument(compOps, ops.Handler(ops.Options{Readiness: e.readiness, Gatherer: e.reg, Pprof: e.cfg.Ops.Pprof})),
		e.log, e.cfg.Server.ReadHeaderTimeout.D(), e.cfg.Server.IdleTimeout.D())
	w.comps[compOps] = w.opsLn

	var (
		st  storeLayer
		err error
	)
	if uses(compStore) {
		if st, w.comps[compStore], err = buildStore(e); err != nil {
			return nil, fmt.Errorf("%s: %w", compStore, err)
		}
	}
	var set *settingsLayer
	if uses(compSettings) {
		if set, err = newSettings(e, st); err != nil {
			return nil, fmt.Errorf("%s: %w", compSettings, err)
		}
	}
	var mgr *settings.Manager
	if set != nil {
		mgr = set.mgr
	}
	if uses(compMQ) {
		if w.queue, w.comps[compMQ], err = buildMQ(e, queueBudget(mgr)); err != nil {
			return nil, fmt.Errorf("%s: %w", compMQ, err)
		}
	}
	var schema *schemacache.Cache
	if uses(compStore) {
		schema = buildSchemaCache(e, st, w.queue)
	}
	var c cache.Cache
	if uses(compCache) {
		if c, w.comps[compCache], err = buildCache(e); err != nil {
			return nil, fmt.Errorf("%s: %w", compCache, err)
		}
	}
	var dd dedupe.Store
	if uses(compDedupe) {
		retention := func(tenant string) time.Duration {
			if set != nil {
				if d := set.retention(tenant); d > 0 {
					return d
				}
			}
			return e.cfg.Idempotency.Retention.D()
		}
		if dd, w.comps[compDedupe], err = buildDedupe(e, w.queue, retention); err != nil {
			return nil, fmt.Errorf("%s: %w", compDedupe, err)
		}
	}
	var co *coordRef
	if uses(compCoord) {
		if co, w.comps[compCoord], err = buildCoord(e, w.queue); err != nil {
			return nil, fmt.Errorf("%s: %w", compCoord, err)
		}
	}
	var (
		authn   *auth.Authenticator
		limiter *limits.Limiter
	)
	if uses(compAPI) {
		if authn, limiter, err = buildAccess(e, mgr, acc); err != nil {
			return nil, fmt.Errorf("%s: %w", compAPI, err)
		}
	}
	if set != nil {
		w.comps[compSettings] = set.component(authn)
	}
	targets := tenantTargets{settings: mgr, database: st.database}
	inv := cacheInvalidator{cache: c, log: e.log}
	settled := commits.New(1 << 16)
	if uses(compIngest) {
		if w.comps[compIngest], err = buildIngest(e, ingestDeps{queue: w.queue, store: st.store, schema: schema, targets: targets, inv: inv, commits: settled, fault: o.writerFault}); err != nil {
			return nil, fmt.Errorf("%s: %w", compIngest, err)
		}
	}
	if uses(compSweeper) {
		w.comps[compSweeper] = buildSweeper(e, w.queue, co, dd)
	}
	if uses(compAPI) {
		var live *pipes.Live
		if set != nil {
			live = set.pipes
		}
		d := apiDeps{store: st, schema: schema, queue: w.queue, cache: c, dedupe: dd, settings: set, pipes: live,
			targets: targets, inv: inv, authn: authn, limiter: limiter, warning: acc.warning, fault: o.apiFault}
		if e.cfg.Roles.Has(config.RoleIngest) {
			d.commits = settled // settlements are only seen in the process that inserts
		}
		if w.apiLn, err = buildAPI(e, d); err != nil {
			return nil, fmt.Errorf("%s: %w", compAPI, err)
		}
		w.comps[compAPI] = w.apiLn
	}
	return w, nil
}
