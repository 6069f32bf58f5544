package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/settings"
	"github.com/wavehouse/wavehouse/internal/store"
)

// settingsLayer is settings_dir (tenants, API keys, limits, pipes) kept current: the manager
// polls the directory, and SIGHUP or POST /v1/ops/settings/reload reload it at once. A change is
// applied as a whole (pipes, tenant stores, keys, limits) or refused, and the previous settings
// stay in force.
type settingsLayer struct {
	mgr    *settings.Manager
	pipes  *pipes.Live
	parsed *pipeParser
	store  storeLayer
	log    *slog.Logger
}

// newSettings loads settings_dir and applies it to the store's tenant router and the pipes.
func newSettings(e env, st storeLayer) (*settingsLayer, error) {
	l := &settingsLayer{pipes: &pipes.Live{}, parsed: &pipeParser{}, store: st, log: e.log.With("component", compSettings)}
	mgr, err := settings.New(settings.Config{Dir: e.cfg.SettingsDir, PollInterval: e.cfg.SettingsPollInterval.D()}, settings.Deps{
		Log:      l.log,
		Check:    l.parsed.check,
		OnChange: func(_, cur *settings.Snapshot) { l.apply(cur) },
	})
	if errors.Is(err, os.ErrNotExist) && e.cfg.SettingsDir != "" {
		// A missing directory is an empty one: the laptop default needs no settings at all.
		mgr, err = settings.New(settings.Config{PollInterval: e.cfg.SettingsPollInterval.D()}, settings.Deps{})
	}
	if err != nil {
		return nil, fmt.Errorf("settings_dir %s: %w", e.cfg.SettingsDir, err)
	}
	l.mgr = mgr
	l.applyPipes(mgr.Current())
	if err := st.router.Apply(mgr.Current()); err != nil {
		return nil, err
	}
	return l, nil
}

// component runs the manager; SIGHUP also reloads authn's operator key when there is one.
func (l *settingsLayer) component(authn *auth.Authenticator) Component {
	start := func(ctx context.Context) error {
		l.createDatabases(ctx, l.mgr.Current())
		return nil
	}
	run := func(ctx context.Context) error {
		go l.reloadOnSIGHUP(ctx, authn)
		return l.mgr.Run(ctx)
	}
	return newComponent(compSettings, start, run, l.mgr.Close)
}

// checkPipes refuses settings whose pipes do not parse.
func checkPipes(s *settings.Snapshot) []settings.Finding {
	_, findings := pipes.FromSettings(s)
	return findings
}

// pipeParser parses a snapshot's pipes once: the settings check parses them to refuse a broken
// pipe, and the reload that follows serves that same parse.
type pipeParser struct {
	mu     sync.Mutex
	snap   *settings.Snapshot
	parsed *pipes.Tenants
}

// check is the settings.Deps.Check of the manager.
func (p *pipeParser) check(s *settings.Snapshot) []settings.Finding {
	t, findings := pipes.FromSettings(s)
	if len(findings) == 0 {
		p.mu.Lock()
		p.snap, p.parsed = s, t
		p.mu.Unlock()
	}
	return findings
}

// tenants returns the pipes of s, parsed by check when s is the snapshot it passed last.
func (p *pipeParser) tenants(s *settings.Snapshot) *pipes.Tenants {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap == s {
		return p.parsed
	}
	t, _ := pipes.FromSettings(s) // an empty snapshot (no settings_dir) was never checked
	return t
}

// applySettings makes a reloaded snapshot effective in every component that derives state from
// it; keys and limits read the manager directly.
func (l *settingsLayer) apply(cur *settings.Snapshot) {
	l.applyPipes(cur)
	if err := l.store.router.Apply(cur); err != nil {
		l.log.Error("tenant store not opened; the tenant keeps its previous store", "error", err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	go func() {
		defer cancel()
		l.createDatabases(ctx, cur)
	}()
}

func (l *settingsLayer) applyPipes(cur *settings.Snapshot) {
	l.pipes.Store(l.parsed.tenants(cur))
}

// createDatabases creates each tenant's database, so a new tenant can create its tables through
// /v1/ops/sql at once. A failure (a server that is down, a user without the grant) is logged and
// only that tenant is affected.
func (l *settingsLayer) createDatabases(ctx context.Context, snap *settings.Snapshot) {
	for _, name := range snap.TenantNames() {
		t, _ := snap.Tenant(name)
		if t.Database == "default" {
			continue
		}
		err := l.store.store.Exec(ctx, store.Target{Tenant: name, Database: "default"}, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(t.Database))
		if err != nil {
			l.log.Warn("tenant database not created", "tenant", name, "database", t.Database, "error", err.Error())
		}
	}
}

// reloadOnSIGHUP reloads the settings directory and the operator key on every SIGHUP.
func (l *settingsLayer) reloadOnSIGHUP(ctx context.Context, authn *auth.Authenticator) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		l.log.Info("SIGHUP: reloading settings")
		_, _ = l.mgr.Reload(ctx) // the outcome is logged by the manager
		if authn != nil {
			if err := authn.ReloadOperatorKey(); err != nil {
				l.log.Error("operator key not reloaded; the previous key stays in force", "error", err.Error())
			}
		}
	}
}

// retention returns a tenant's Idempotency-Key retention from the settings (0: the boot value).
func (l *settingsLayer) retention(tenant string) time.Duration {
	if t, ok := l.mgr.Current().Tenant(tenant); ok {
		return t.Dedupe.Retention
	}
	return 0
}

// tenantTargets resolves a tenant to its database from the settings in force. The anonymous
// tenant, when it has no settings file, uses the boot database; so does every lookup in a
// process without settings.
type tenantTargets struct {
	settings *settings.Manager
	database string
}

func (t tenantTargets) Target(tenant string) (store.Target, error) {
	if t.settings != nil {
		if ten, ok := t.settings.Current().Tenant(tenant); ok {
			return store.Target{Tenant: tenant, Database: ten.Database}, nil
		}
	}
	if tenant == auth.DefaultAnonymousTenant {
		return store.Target{Tenant: tenant, Database: t.database}, nil
	}
	return store.Target{}, fmt.Errorf("tenant %q is not in the settings", tenant)
}

// LoadSettings loads and checks cfg's settings directory the way a booting process does (a
// missing directory is empty), for `wavehouse config check`.
func LoadSettings(cfg config.Config) (*settings.Snapshot, error) {
	if cfg.SettingsDir == "" {
		return settings.Empty(), nil
	}
	snap, err := settings.Load(cfg.SettingsDir, time.Now())
	if errors.Is(err, os.ErrNotExist) {
		return settings.Empty(), nil
	}
	if err != nil {
		return nil, err
	}
	if f := checkPipes(snap); len(f) > 0 {
		return nil, &settings.InvalidError{Findings: f}
	}
	return snap, nil
}
