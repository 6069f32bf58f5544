// Package console serves the operator console: a small web application under /console on the
// API listener (docs/console.md, docs/adr/0010-operator-console-on-the-api-listener.md). Its
// pages, scripts and styles are embedded in the binary; every route, assets included, needs the
// operator key, proved once on the login form and then by a session cookie
// (auth.Authenticator.RequireConsole). The JSON it adds is the overview's stats, computed here
// from the metrics registry, and the tables overview; dead letters, queries and the live tail are
// the API's own handlers, mounted under /console/api by api.API.ConsoleRoutes.
package console

import (
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
)

//go:embed assets
var assets embed.FS

// Config tunes the console.
type Config struct {
	// SessionTTL is how long a login lasts (default 12h).
	SessionTTL time.Duration
	// SampleInterval is the shortest time between two stats samples (default 1s).
	SampleInterval time.Duration
	// Keep is how many samples the charts show (default 300).
	Keep int
}

// Targets resolves a tenant to its store target.
type Targets interface {
	Target(tenant string) (store.Target, error)
}

// Deps are the console's collaborators. DLQ may be nil (a process without one).
type Deps struct {
	Auth    *auth.Authenticator
	Metrics prometheus.Gatherer
	Store   store.Querier
	Targets Targets
	DLQ     mq.DeadLetters
	Log     *slog.Logger
	// Now is the clock of the stats samples (default time.Now).
	Now func() time.Time
}

// Console serves the console's routes.
type Console struct {
	cfg    Config
	deps   Deps
	stats  *sampler
	static http.Handler
}

// New returns the console; it starts nothing.
func New(cfg Config, deps Deps) (*Console, error) {
	if deps.Auth == nil || deps.Metrics == nil || deps.Store == nil || deps.Targets == nil {
		return nil, errors.New("console: Auth, Metrics, Store and Targets are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = time.Second
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 300
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	return &Console{cfg: cfg, deps: deps, stats: newSampler(deps.Metrics, deps.Now, cfg.SampleInterval, cfg.Keep),
		static: staticHandler(http.StripPrefix("/console/", http.FileServerFS(sub)))}, nil
}

// Guard wraps h so that only the operator reaches it (auth.Authenticator.RequireConsole); a
// caller without the credential gets the login page or a JSON 401.
func (c *Console) Guard(h http.Handler) http.Handler {
	return c.deps.Auth.RequireConsole(h, http.HandlerFunc(c.denied))
}

// Routes registers the console's own routes on mux, each behind Guard except the login form's
// POST, which checks the operator key itself.
func (c *Console) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /console/login", c.login)
	mux.Handle("POST /console/logout", c.Guard(http.HandlerFunc(c.logout)))
	mux.Handle("GET /console/{$}", c.Guard(c.page("index.html")))
	mux.Handle("GET /console/{file}", c.Guard(c.static))
	mux.Handle("GET /console", c.Guard(http.RedirectHandler("/console/", http.StatusMovedPermanently)))
	mux.Handle("GET /console/api/session", c.Guard(http.HandlerFunc(c.session)))
	mux.Handle("GET /console/api/stats", c.Guard(http.HandlerFunc(c.serveStats)))
	mux.Handle("GET /console/api/tables", c.Guard(http.HandlerFunc(c.tables)))
}

// page serves one embedded HTML file.
func (c *Console) page(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			httpx.WriteError(w, httpx.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		securityHeaders(w)
		_, _ = w.Write(b)
	})
}

// staticHandler serves the embedded scripts and styles; the browser revalidates them, so a new
// binary's assets are picked up on the next load.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		securityHeaders(w)
		h.ServeHTTP(w, r)
	})
}

// securityHeaders forbid framing and anything not served by the console itself.
func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// denied answers a request without the operator credential: a browser navigating gets the login
// form (401), anything else a JSON 401.
func (c *Console) denied(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/console/api/") && strings.Contains(r.Header.Get("Accept"), "text/html") {
		b, _ := assets.ReadFile("assets/login.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		securityHeaders(w)
		// The login form is one self-contained page: its style is inline, nothing else loads.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="wavehouse console"`)
	httpx.WriteError(w, httpx.Error{Status: http.StatusUnauthorized, Code: "auth.console_login_required",
		Message: "the console needs the operator key: log in at /console/ or send Authorization: Bearer <operator key>"})
}

// login checks the operator key posted by the login form and sets the session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if !c.deps.Auth.ConsoleEnabled() {
		httpx.WriteError(w, httpx.Error{Status: http.StatusNotFound, Code: "auth.console_disabled",
			Message: "the console needs the operator key: set auth.operator_key_file"})
		return
	}
	if err := r.ParseForm(); err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "console.invalid_login", Message: "the login form must post the field key"})
		return
	}
	value, expires, ok := c.deps.Auth.ConsoleLogin(r.PostForm.Get("key"), c.cfg.SessionTTL)
	if !ok {
		c.deps.Log.WarnContext(r.Context(), "audit: console login failed", "remote", r.RemoteAddr)
		httpx.WriteError(w, httpx.Error{Status: http.StatusUnauthorized, Code: "auth.invalid_key", Message: "that is not the operator key"})
		return
	}
	c.deps.Log.InfoContext(r.Context(), "audit: console login", "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: auth.ConsoleCookie, Value: value, Path: "/console", Expires: expires,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"expires": expires})
		return
	}
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: auth.ConsoleCookie, Value: "", Path: "/console", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"logged_out": true})
}

// session tells the page it is logged in and which tenants it may pick.
func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"tenants": c.deps.Auth.Tenants(), "dlq": c.deps.DLQ != nil})
}

func (c *Console) serveStats(w http.ResponseWriter, r *http.Request) {
	s, err := c.stats.stats()
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusInternalServerError, Code: "console.metrics", Message: err.Error()})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s)
}
