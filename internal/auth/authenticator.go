package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/settings"
)

var (
	// ErrMissingKey means the request carried no bearer credential.
	ErrMissingKey = errors.New("auth: missing api key")
	// ErrInvalidKey means the credential is malformed, unknown, revoked or its secret is wrong.
	ErrInvalidKey = errors.New("auth: invalid api key")
	// ErrExpiredKey means the key exists but has expired.
	ErrExpiredKey = errors.New("auth: api key expired")
	// ErrForbidden means the principal lacks a scope or table the route needs.
	ErrForbidden = errors.New("auth: forbidden")
	// ErrInvalidToken means a JWT is malformed, signed by no key of the tenant its issuer names,
	// or carries the wrong issuer or audience.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrExpiredToken means a JWT verified but is past its exp (beyond the leeway).
	ErrExpiredToken = errors.New("auth: token expired")
	// ErrUnknownRole means a verified JWT's role claim is missing or maps to no role.
	ErrUnknownRole = errors.New("auth: token role not allowed")
)

// minOperatorKeyLen is the shortest operator key accepted from its file.
const minOperatorKeyLen = 32

// DefaultAnonymousTenant is the tenant of anonymous requests when Config leaves it empty.
const DefaultAnonymousTenant = "default"

// Config configures an Authenticator.
type Config struct {
	// OperatorKeyFile is the path of a file whose content (trimmed) is the operator key, at least
	// 32 characters; empty disables the operator key (default ""). The binary never leaves it
	// empty: without auth.operator_key_file it generates one (EnsureOperatorKeyFile).
	OperatorKeyFile string
	// AllowAnonymous lets requests without a credential act as AnonymousTenant on the ingest,
	// query and stream routes while the settings hold no API key; set it when the API listener is
	// loopback or auth.allow_anonymous is true (default false). The anonymous principal never
	// reaches /v1/ops/*: operator SQL always needs the operator key or a tenant admin key.
	AllowAnonymous bool
	// AnonymousTenant is the tenant of anonymous requests (default "default").
	AnonymousTenant string
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.AnonymousTenant != "" && !settings.ValidTenantName(c.AnonymousTenant) {
		errs = append(errs, fmt.Errorf("auth: AnonymousTenant %q is not a valid tenant name", c.AnonymousTenant))
	}
	return errors.Join(errs...)
}

// Source provides the settings snapshot in force; *settings.Manager implements it.
type Source interface {
	Current() *settings.Snapshot
}

// Deps are an Authenticator's collaborators.
type Deps struct {
	// Settings provides keys; required.
	Settings Source
	// Log receives audit lines; nil discards them.
	Log *slog.Logger
	// Now is the clock used for expiry; nil means time.Now.
	Now func() time.Time
	// Registerer receives wavehouse_auth_denied_total{code}; nil registers nothing.
	Registerer prometheus.Registerer
	// HTTPClient fetches JWKS URLs; nil means a client with a 5 s timeout.
	HTTPClient *http.Client
}

// Authenticator checks credentials against the settings in force.
type Authenticator struct {
	cfg      Config
	settings Source
	log      *slog.Logger
	now      func() time.Time
	operator atomic.Pointer[[sha256.Size]byte] // nil when no operator key
	denied   *prometheus.CounterVec            // nil without a Registerer
	jwks     *jwksCache
}

// New returns an Authenticator and reads the operator key file when one is configured.
func New(cfg Config, deps Deps) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Settings == nil {
		return nil, errors.New("auth: Deps.Settings is required")
	}
	if cfg.AnonymousTenant == "" {
		cfg.AnonymousTenant = DefaultAnonymousTenant
	}
	a := &Authenticator{cfg: cfg, settings: deps.Settings, log: deps.Log, now: deps.Now}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.jwks = newJWKSCache(deps.HTTPClient, a.now, a.log)
	if err := a.ReloadOperatorKey(); err != nil {
		return nil, err
	}
	if deps.Registerer != nil {
		a.denied = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_auth_denied_total", Help: "Requests refused by authentication (401) or authorization (403), by error code.",
		}, []string{"code"})
		if err := deps.Registerer.Register(a.denied); err != nil {
			return nil, fmt.Errorf("auth: register metrics: %w", err)
		}
	}
	return a, nil
}

// ReloadOperatorKey reads the operator key file again (call it on SIGHUP to rotate the key).
// On error the previous operator key stays in force.
func (a *Authenticator) ReloadOperatorKey() error {
	if a.cfg.OperatorKeyFile == "" {
		return nil
	}
	b, err := os.ReadFile(a.cfg.OperatorKeyFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named below; keep the file's content out of the error
		}
		return fmt.Errorf("auth: operator_key_file %s: %w", a.cfg.OperatorKeyFile, err)
	}
	key := strings.TrimSpace(string(b))
	if len(key) < minOperatorKeyLen {
		return fmt.Errorf("auth: operator_key_file %s: the key must be at least %d characters", a.cfg.OperatorKeyFile, minOperatorKeyLen)
	}
	sum := sha256.Sum256([]byte(key))
	a.operator.Store(&sum)
	return nil
}

// Anonymous reports whether requests without a credential are currently admitted.
func (a *Authenticator) Anonymous() bool {
	return a.cfg.AllowAnonymous && a.settings.Current().Credentials() == 0
}

// Authenticate derives the principal from r's Authorization header. The returned key id (for
// audit lines) is set whenever the credential parsed, even when authentication failed.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, string, error) {
	return a.authenticate(r, Rule{})
}

// authenticate is Authenticate for a route with rule: with rule.QueryToken, a JWT may come as
// ?token= instead, and with rule.ClickHouse the credential may come the ways ClickHouse clients
// send a password (clickHouseCredential); either parameter is removed from r.URL so that no
// handler or log line after this one sees it.
func (a *Authenticator) authenticate(r *http.Request, rule Rule) (Principal, string, error) {
	h := r.Header.Get("Authorization")
	if rule.ClickHouse {
		token, ok := clickHouseCredential(r)
		if !ok {
			return a.anonymous()
		}
		return a.verifyToken(r, token)
	}
	if h == "" && rule.QueryToken && r.URL.Query().Has("token") {
		q := r.URL.Query()
		token := q.Get("token")
		q.Del("token")
		r.URL.RawQuery = q.Encode()
		if !looksLikeJWT(token) {
			return Principal{}, "", ErrInvalidToken // API keys never travel in a URL
		}
		p, err := a.verifyJWT(r.Context(), token)
		return p, "", err
	}
	if h == "" {
		return a.anonymous()
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return Principal{}, "", ErrMissingKey
	}
	return a.verifyToken(r, strings.TrimSpace(token))
}

// anonymous is the principal of a request without a credential: the anonymous tenant while it
// is admitted, else ErrMissingKey.
func (a *Authenticator) anonymous() (Principal, string, error) {
	if a.Anonymous() {
		return Principal{Tenant: a.cfg.AnonymousTenant, Anonymous: true}, "", nil
	}
	return Principal{}, "", ErrMissingKey
}

// verifyToken maps a credential to its principal: the operator key, a JWT or an API key.
func (a *Authenticator) verifyToken(r *http.Request, token string) (Principal, string, error) {
	if op := a.operator.Load(); op != nil {
		sum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], op[:]) == 1 {
			return Principal{Operator: true}, "", nil
		}
	}
	if looksLikeJWT(token) {
		p, err := a.verifyJWT(r.Context(), token)
		return p, "", err
	}
	id, secret, ok := ParseToken(token)
	if !ok {
		return Principal{}, "", ErrInvalidKey
	}
	key, tenant, found := a.settings.Current().KeyByID(id)
	hash := ""
	if found {
		hash = key.Hash
	}
	if !secretMatches(secret, hash) || !found {
		return Principal{}, id, ErrInvalidKey
	}
	if key.Expired(a.now()) {
		return Principal{}, id, ErrExpiredKey
	}
	return Principal{Tenant: tenant.Name, KeyID: id, Scopes: key.Scopes, Tables: key.Tables}, id, nil
}
