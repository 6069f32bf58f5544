package app

import (
	"fmt"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/httpx"
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
	return auth.CheckListener(cfg.Server.Listen, snap.Credentials(), cfg.Auth.AllowAnonymous)
}

// buildAccess creates the authenticator and the limiter of the API over the settings in force,
// with the secure-default decision New made (a public listener without keys never gets here
// unless anonymous access is allowed, which buildAPI logs loudly at every boot).
func buildAccess(e env, mgr *settings.Manager, acc access) (*auth.Authenticator, *limits.Limiter, error) {
	keyFile, err := operatorKeyFile(e)
	if err != nil {
		return nil, nil, err
	}
	authn, err := auth.New(auth.Config{OperatorKeyFile: keyFile, AllowAnonymous: acc.anonymous},
		auth.Deps{Settings: mgr, Log: e.log.With("component", "auth"), Registerer: e.reg})
	if err != nil {
		return nil, nil, err
	}
	l := e.cfg.Limits
	limiter, err := limits.New(limits.Config{MaxWait: l.MaxWait.D(), QueryWait: l.QueryWait.D(), Defaults: settings.Limits{
		MaxConcurrentQueries: l.MaxConcurrentQueries, MaxResultRows: l.MaxResultRows, MaxResultBytes: l.MaxResultBytes,
		MaxExecutionTime: settings.Duration(l.MaxExecutionTime), CacheTTL: settings.Duration(l.CacheTTL),
	}}, limits.Deps{Settings: mgr, Registerer: e.reg})
	return authn, limiter, err
}

// operatorKeyFile returns the file of the operator key: auth.operator_key_file, or else the key
// generated under data_dir at first boot (docs/adr/0009). It logs the path, never the key.
func operatorKeyFile(e env) (string, error) {
	if f := e.cfg.Auth.OperatorKeyFile; f != "" {
		return f, nil
	}
	path := auth.GeneratedOperatorKeyFile(e.cfg.DataDir)
	created, err := auth.EnsureOperatorKeyFile(path)
	if err != nil {
		return "", fmt.Errorf("%w (or set auth.operator_key_file)", err)
	}
	msg := "operator key: auth.operator_key_file is empty, using the generated key file; send its content as Authorization: Bearer on /v1/ops/*"
	if created {
		msg = "operator key: auth.operator_key_file is empty, generated a key file; send its content as Authorization: Bearer on /v1/ops/*"
	}
	e.log.Info(msg, "path", path)
	return path, nil
}

// queryLimits returns the query limits in force of a tenant (its settings over the boot
// defaults); the limiter also holds the tenant's concurrency slots.
func queryLimits(limiter *limits.Limiter) func(tenant string) query.Limits {
	return func(tenant string) query.Limits {
		l := limiter.Limits(tenant)
		return query.Limits{MaxRows: uint64(l.MaxResultRows), MaxBytes: uint64(l.MaxResultBytes),
			MaxExecutionTime: l.MaxExecutionTime.D(), CacheTTL: l.CacheTTL.D()}
	}
}

// corsPolicy answers the CORS middleware from the settings in force: the union of the policies
// of every tenant allowing the origin (auth narrows each actual request to its own tenant).
func corsPolicy(mgr *settings.Manager) func(origin string) (httpx.CORSRule, bool) {
	return func(origin string) (httpx.CORSRule, bool) {
		c, ok := mgr.Current().CORSFor(origin)
		return httpx.CORSRule{Methods: c.Methods, Headers: c.Headers, MaxAge: c.MaxAge}, ok
	}
}
