package settings

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeAtomic replaces dir/rel by renaming a complete temporary file over it, as editors and
// ConfigMap updates do, so the poller never sees it half-written.
func writeAtomic(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp") // dot files are ignored
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func keyLine(id, hash string) string {
	return "  - {id: " + id + ", hash: " + hash + ", scopes: [ingest]}\n"
}

func newManager(t *testing.T, dir string, log *slog.Logger) *Manager {
	t.Helper()
	m, err := New(Config{Dir: dir, PollInterval: 10 * time.Millisecond}, Deps{Log: log, Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(t.Context()) })
	return m
}

func TestReloadAddRevokeKeyAndChangeLimit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", "database: acme\nlimits: {requests_per_second: 10}\nkeys:\n"+keyLine("a1b2c3d4e5f6", hashA))
	var changes int
	m, err := New(Config{Dir: dir}, Deps{OnChange: func(old, cur *Snapshot) { changes++ }})
	if err != nil {
		t.Fatal(err)
	}
	first := m.Current()

	// Add a key.
	write(t, dir, "tenants/acme.yaml", "database: acme\nlimits: {requests_per_second: 10}\nkeys:\n"+keyLine("a1b2c3d4e5f6", hashA)+keyLine("0a0b0c0d0e0f", hashB))
	res, err := m.Reload(t.Context())
	if err != nil || !res.Changed || res.Keys != 2 {
		t.Fatalf("reload add: %+v %v", res, err)
	}
	if _, _, ok := m.Current().KeyByID("0a0b0c0d0e0f"); !ok {
		t.Fatal("added key not found after reload")
	}
	// Revoke the first key and change the limit.
	write(t, dir, "tenants/acme.yaml", "database: acme\nlimits: {requests_per_second: 3}\nkeys:\n"+keyLine("0a0b0c0d0e0f", hashB))
	if _, err := m.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := m.Current().KeyByID("a1b2c3d4e5f6"); ok {
		t.Fatal("revoked key still found")
	}
	if acme, _ := m.Current().Tenant("acme"); acme.Limits.RequestsPerSecond != 3 {
		t.Fatalf("limit = %v, want 3", acme.Limits.RequestsPerSecond)
	}
	// An unchanged directory is not a change.
	if res, err := m.Reload(t.Context()); err != nil || res.Changed {
		t.Fatalf("no-op reload: %+v %v", res, err)
	}
	if changes != 2 {
		t.Fatalf("OnChange called %d times, want 2", changes)
	}
	// The first snapshot is immutable: it still holds the revoked key.
	if _, _, ok := first.KeyByID("a1b2c3d4e5f6"); !ok {
		t.Fatal("an old snapshot was mutated")
	}
}

func TestInvalidEditKeepsPreviousSettings(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", "database: acme\nkeys:\n"+keyLine("a1b2c3d4e5f6", hashA))
	log := &logbuf.Buffer{}
	m := newManager(t, dir, slog.New(slog.NewJSONHandler(log, nil)))
	before := m.Current()
	const pasted = "wh_a1b2c3d4e5f6_7f3c9a0b1d2e4f5a6b7c8d9e0f1a2b3c"
	write(t, dir, "tenants/acme.yaml", "database: acme\nkeys:\n  - {id: a1b2c3d4e5f6, hash: "+pasted+", scopes: [ingest]}\n")
	write(t, dir, "tenants/other.yaml", "database: other\nunknown_thing: 1\n")
	_, err := m.Reload(t.Context())
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Findings) != 2 {
		t.Fatalf("err = %v, want 2 findings", err)
	}
	if m.Current() != before {
		t.Fatal("an invalid edit replaced the snapshot")
	}
	if _, _, ok := m.Current().KeyByID("a1b2c3d4e5f6"); !ok {
		t.Fatal("old key no longer served")
	}
	out := log.String()
	if !strings.Contains(out, "settings reload refused") || !strings.Contains(out, `unknown key \"unknown_thing\"`) {
		t.Fatalf("refusal not logged with findings: %s", out)
	}
	if strings.Contains(out, "7f3c9a0b1d2e4f5a") || strings.Contains(err.Error(), "7f3c9a0b1d2e4f5a") {
		t.Fatalf("secret leaked: %s / %v", out, err)
	}
	// Fixing the file is picked up.
	write(t, dir, "tenants/acme.yaml", "database: acme\nkeys:\n"+keyLine("0a0b0c0d0e0f", hashB))
	write(t, dir, "tenants/other.yaml", "database: other\n")
	if res, err := m.Reload(t.Context()); err != nil || !res.Changed || res.Tenants != 2 {
		t.Fatalf("reload after fix: %+v %v", res, err)
	}
}

func TestNewRefusesInvalidDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", "nope: 1\n")
	if _, err := New(Config{Dir: dir}, Deps{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Config{PollInterval: -1}, Deps{}); err == nil || !strings.Contains(err.Error(), "settings.poll_interval") {
		t.Fatalf("config err = %v", err)
	}
}

func TestNoDirectoryIsEmpty(t *testing.T) {
	m, err := New(Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Current() == nil || m.Current().KeyCount() != 0 {
		t.Fatal("want an empty snapshot")
	}
	if res, err := m.Reload(t.Context()); err != nil || res.Changed {
		t.Fatalf("reload: %+v %v", res, err)
	}
}

func TestRunPicksUpFileChanges(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme.yaml", "database: acme\n")
	log := &logbuf.Buffer{}
	m := newManager(t, dir, slog.New(slog.NewJSONHandler(log, nil)))
	done := make(chan error, 1)
	go func() { done <- m.Run(t.Context()) }()

	writeAtomic(t, dir, "tenants/acme.yaml", "database: acme\nkeys:\n"+keyLine("a1b2c3d4e5f6", hashA))
	poll.Until(t, 10*time.Second, "the added key", func() bool { _, _, ok := m.Current().KeyByID("a1b2c3d4e5f6"); return ok })

	good := m.Current()
	writeAtomic(t, dir, "tenants/acme.yaml", "database: acme\nbad_key: 1\n")
	poll.Until(t, 10*time.Second, "the refusal", func() bool { return strings.Contains(log.String(), "settings reload refused") })
	if m.Current() != good {
		t.Fatal("invalid edit applied by the poller")
	}
	// The refused state is reported once, not at every poll.
	polls := m.polls.Load()
	poll.Until(t, 10*time.Second, "more polls", func() bool { return m.polls.Load() >= polls+5 })
	if n := strings.Count(log.String(), "settings reload refused"); n != 1 {
		t.Fatalf("refusal logged %d times, want 1", n)
	}
	writeAtomic(t, dir, "tenants/zeta.yaml", "database: zeta\n")
	writeAtomic(t, dir, "tenants/acme.yaml", "database: acme\n")
	poll.Until(t, 10*time.Second, "the new tenant", func() bool { _, ok := m.Current().Tenant("zeta"); return ok })

	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.Reload(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reload after Close = %v", err)
	}
	if err := m.Run(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close = %v", err)
	}
	if m.Current() == nil {
		t.Fatal("Current after Close is nil")
	}
}

func TestPasswordNeverInLogsOrErrors(t *testing.T) {
	dir := t.TempDir()
	const password = "pa55-W0rd-never-logged"
	pw := filepath.Join(t.TempDir(), "acme.pw")
	if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "tenants/acme.yaml", "database: acme\nclickhouse:\n  addrs: [h:9000]\n  password_file: "+pw+"\n")
	log := &logbuf.Buffer{}
	m := newManager(t, dir, slog.New(slog.NewJSONHandler(log, nil)))
	if acme, _ := m.Current().Tenant("acme"); acme.ClickHouse.PasswordFile != pw {
		t.Fatalf("password file = %q", acme.ClickHouse.PasswordFile)
	}
	write(t, dir, "tenants/acme.yaml", "database: acme\nclickhouse:\n  addrs: [h:9000]\n  password_file: "+pw+"\n  password: "+password+"\n")
	_, err := m.Reload(t.Context())
	if err == nil {
		t.Fatal("inline password accepted")
	}
	// The finding names the key, not its value.
	if strings.Contains(err.Error(), password) || strings.Contains(log.String(), password) {
		t.Fatalf("password leaked:\n%v\n%s", err, log.String())
	}
}

func TestCheckHookRefusesAsAWhole(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tenants/acme/tenant.yaml", "database: acme\n")
	write(t, dir, "tenants/acme/pipes/top.sql", "SELECT 1")
	check := func(s *Snapshot) []Finding {
		var fs []Finding
		for _, name := range s.TenantNames() {
			tn, _ := s.Tenant(name)
			for _, p := range tn.Pipes {
				if !strings.HasPrefix(p.SQL, "SELECT") {
					fs = append(fs, Finding{File: p.File, Line: 1, Message: "not a SELECT"})
				}
			}
		}
		return fs
	}
	m, err := New(Config{Dir: dir}, Deps{Check: check})
	if err != nil {
		t.Fatal(err)
	}
	before := m.Current()
	write(t, dir, "tenants/acme/pipes/top.sql", "DROP TABLE x")
	write(t, dir, "tenants/acme/pipes/new.sql", "SELECT 2")
	_, err = m.Reload(t.Context())
	if err == nil || !strings.Contains(err.Error(), "tenants/acme/pipes/top.sql:1: not a SELECT") {
		t.Fatalf("err = %v", err)
	}
	if m.Current() != before {
		t.Fatal("snapshot with a bad pipe applied")
	}
	write(t, dir, "tenants/acme/pipes/top.sql", "SELECT 3")
	if _, err := m.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if acme, _ := m.Current().Tenant("acme"); len(acme.Pipes) != 2 {
		t.Fatalf("pipes after adding one: %+v", acme.Pipes)
	}
	write(t, dir, "tenants/acme/pipes/top.sql", "DROP TABLE x")
	if _, err := New(Config{Dir: dir}, Deps{Check: check}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("boot with a bad pipe: %v", err)
	}
}
