package settings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Manager.
type Config struct {
	// Dir is the settings directory; empty means no tenants and no keys (default "").
	Dir string
	// PollInterval is how often Run checks the directory for changes (default 2s).
	PollInterval time.Duration
}

// DefaultPollInterval is the PollInterval used when Config leaves it zero.
const DefaultPollInterval = 2 * time.Second

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.PollInterval < 0 {
		errs = append(errs, errors.New("settings.poll_interval: must not be negative"))
	}
	return errors.Join(errs...)
}

// Deps are a Manager's collaborators.
type Deps struct {
	// Log receives reload outcomes and findings; nil discards them.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange, when set, is called after each successful reload with the old and new snapshot,
	// from the goroutine that reloaded. It must not block for long.
	OnChange func(old, cur *Snapshot)
	// Check, when set, validates what this package cannot (such as parsing the pipe files) as
	// part of the whole: any finding refuses the snapshot at boot and on reload, like a finding
	// of Load.
	Check func(*Snapshot) []Finding
}

// ReloadResult tells what a reload did.
type ReloadResult struct {
	// Changed is true when a new snapshot replaced the previous one.
	Changed bool `json:"changed"`
	// Fingerprint identifies the snapshot in force after the reload.
	Fingerprint string `json:"fingerprint"`
	// Tenants and Keys count what the snapshot in force holds.
	Tenants int `json:"tenants"`
	Keys    int `json:"keys"`
}

// Manager holds the current settings snapshot and reloads it.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	hook  func(old, cur *Snapshot)
	check func(*Snapshot) []Finding

	cur      atomic.Pointer[Snapshot]
	mu       sync.Mutex // serialises reloads
	rejected string     // fingerprint of the last refused directory state, not retried until it changes
	closed   atomic.Bool
	polls    atomic.Int64 // ticks of Run, for tests
	readErr  string       // last read error logged by the poller, not repeated at every tick
	done     chan struct{}
	stop     sync.Once
}

// New loads the settings directory once and returns a Manager serving it. An invalid directory
// is an error (*InvalidError): a process must not boot on settings it cannot honour. New starts
// no goroutines.
func New(cfg Config, deps Deps) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	m := &Manager{cfg: cfg, log: deps.Log, now: deps.Now, hook: deps.OnChange, check: deps.Check, done: make(chan struct{})}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	snap := Empty()
	if cfg.Dir != "" {
		s, err := Load(cfg.Dir, m.now())
		if err != nil {
			return nil, err
		}
		if m.check != nil {
			if f := m.check(s); len(f) > 0 {
				return nil, &InvalidError{Findings: f}
			}
		}
		snap = s
	}
	m.cur.Store(snap)
	return m, nil
}

// Current returns the snapshot in force; never nil. It is safe for concurrent use.
func (m *Manager) Current() *Snapshot { return m.cur.Load() }

// Reload reads the directory again. A valid directory replaces the snapshot; an invalid one is
// refused with an *InvalidError, logged with every finding, and the previous snapshot stays in
// force. An explicit Reload always re-reads, even a state refused before.
func (m *Manager) Reload(ctx context.Context) (ReloadResult, error) {
	if m.closed.Load() {
		return ReloadResult{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return ReloadResult{}, err
	}
	return m.reload(ctx, "")
}

// reload loads the directory. want, when set, is the fingerprint the poller saw settle; if the
// directory changed again since, the reload waits for the next poll.
func (m *Manager) reload(ctx context.Context, want string) (ReloadResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.cur.Load()
	res := ReloadResult{Fingerprint: old.Fingerprint, Tenants: len(old.tenants), Keys: old.KeyCount()}
	if m.cfg.Dir == "" {
		return res, nil
	}
	files, findings, err := readTree(m.cfg.Dir)
	if err != nil {
		m.log.ErrorContext(ctx, "settings reload failed; previous settings stay in force", "dir", m.cfg.Dir, "error", err.Error())
		return res, fmt.Errorf("settings: read %s: %w", m.cfg.Dir, err)
	}
	fp := fingerprint(files)
	if fp == old.Fingerprint || (want != "" && fp != want) {
		return res, nil
	}
	snap, more := build(files)
	if findings = append(findings, more...); len(findings) == 0 && m.check != nil {
		findings = m.check(snap)
	}
	if len(findings) > 0 {
		m.rejected = fp
		attrs := []any{"dir", m.cfg.Dir, "findings", len(findings)}
		for i, f := range findings {
			attrs = append(attrs, fmt.Sprintf("finding_%d", i+1), f.String())
		}
		m.log.WarnContext(ctx, "settings reload refused; previous settings stay in force", attrs...)
		return res, &InvalidError{Findings: findings}
	}
	snap.Dir, snap.Fingerprint, snap.LoadedAt = m.cfg.Dir, fp, m.now()
	m.cur.Store(snap)
	m.rejected = ""
	m.log.InfoContext(ctx, "settings reloaded", "dir", m.cfg.Dir, "tenants", len(snap.tenants), "keys", snap.KeyCount(), "fingerprint", fp[:12])
	if m.hook != nil {
		m.hook(old, snap)
	}
	return ReloadResult{Changed: true, Fingerprint: fp, Tenants: len(snap.tenants), Keys: snap.KeyCount()}, nil
}

// Run polls the directory every PollInterval and reloads it when its contents changed and then
// stayed unchanged for one interval, until ctx ends or Close is called. A refused state is not
// reported again until the directory changes.
func (m *Manager) Run(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if m.cfg.Dir == "" {
		select {
		case <-ctx.Done():
		case <-m.done:
		}
		return nil
	}
	tick := time.NewTicker(m.cfg.PollInterval)
	defer tick.Stop()
	pending := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.done:
			return nil
		case <-tick.C:
			pending = m.poll(ctx, pending)
			m.polls.Add(1)
		}
	}
}

// poll reloads when the directory's contents differ from the snapshot in force and have stayed
// the same since the previous poll, so that a file caught half-written is not applied. It
// returns the fingerprint to compare against at the next poll.
func (m *Manager) poll(ctx context.Context, pending string) string {
	files, _, err := readTree(m.cfg.Dir)
	m.mu.Lock()
	if err != nil {
		if err.Error() != m.readErr {
			m.readErr = err.Error()
			m.log.ErrorContext(ctx, "settings directory unreadable; previous settings stay in force", "dir", m.cfg.Dir, "error", err.Error())
		}
		m.mu.Unlock()
		return ""
	}
	m.readErr = ""
	fp := fingerprint(files)
	settled := fp == m.cur.Load().Fingerprint || fp == m.rejected
	m.mu.Unlock()
	switch {
	case settled:
		return ""
	case fp != pending:
		return fp
	}
	_, _ = m.reload(ctx, fp) // outcome already logged
	return ""
}

// Close stops Run. It is idempotent; later Reload and Run calls return ErrClosed while Current
// keeps serving the last snapshot.
func (m *Manager) Close(context.Context) error {
	m.stop.Do(func() {
		m.closed.Store(true)
		close(m.done)
	})
	return nil
}
