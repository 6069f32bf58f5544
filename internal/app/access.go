package app

import (
	"time"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/settings"
)

// CheckAccess applies the secure default to a configuration and the settings it would serve:
// a non-loopback API listener needs API keys or auth.allow_anonymous. It returns whether
// anonymous requests are admitted while no key exists, and a warning to log at every boot when
// the API is public and anonymous. Processes without the api role have no API listener.
func CheckAccess(cfg config.Config, snap *settings.Snapshot) (anonymous bool, warning string, err error) {
	if !cfg.Roles.Has(config.RoleAPI) {
		return false, "", nil
	}
	return auth.CheckListener(cfg.Server.Listen, snap.KeyCount(), cfg.Auth.AllowAnonymous)
}

// buildAccess creates the authenticator and the limiter of the API over the settings in force,
// with the secure-default decision New made (a public listener without keys never gets here
// unless anonymous access is allowed, which is logged loudly at every boot).
func (a *App) buildAccess() error {
	if a.accessWarning != "" {
		a.log.Warn("SECURITY: "+a.accessWarning, "listen", a.cfg.Server.Listen)
	}
	var err error
	a.authn, err = auth.New(auth.Config{OperatorKeyFile: a.cfg.Auth.OperatorKeyFile, AllowAnonymous: a.anonymous},
		auth.Deps{Settings: a.settings, Log: a.log.With("component", "auth"), Registerer: a.reg})
	if err != nil {
		return err
	}
	l := a.cfg.Limits
	a.limiter, err = limits.New(limits.Config{MaxWait: l.MaxWait.D(), QueryWait: l.QueryWait.D(), Defaults: settings.Limits{
		MaxConcurrentQueries: l.MaxConcurrentQueries, MaxResultRows: l.MaxResultRows, MaxResultBytes: l.MaxResultBytes,
		MaxExecutionTime: settings.Duration(l.MaxExecutionTime), CacheTTL: settings.Duration(l.CacheTTL),
	}}, limits.Deps{Settings: a.settings, Registerer: a.reg})
	return err
}

// queryLimits returns a tenant's query limits in force (its settings over the boot defaults);
// the limiter holds its concurrency slots.
func (a *App) queryLimits(tenant string) query.Limits {
	l := a.limiter.Limits(tenant)
	return query.Limits{MaxRows: uint64(l.MaxResultRows), MaxBytes: uint64(l.MaxResultBytes),
		MaxExecutionTime: l.MaxExecutionTime.D(), CacheTTL: l.CacheTTL.D()}
}

// retention returns a tenant's Idempotency-Key retention from the settings (0: the boot value).
func (a *App) retention(tenant string) time.Duration {
	if t, ok := a.settings.Current().Tenant(tenant); ok {
		return t.Dedupe.Retention
	}
	return 0
}
