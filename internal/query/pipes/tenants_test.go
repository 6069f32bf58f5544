package pipes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/query/pipes"
	"github.com/wavehouse/wavehouse/internal/settings"
)

func loadSettings(t *testing.T, files map[string]string) *settings.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := settings.Load(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFromSettings gives every tenant the shared pipes, lets a tenant's own pipe replace a shared
// one of the same name, and keeps one tenant's pipes away from the others.
func TestFromSettings(t *testing.T) {
	snap := loadSettings(t, map[string]string{
		"pipes/top.sql":              "SELECT 1 AS shared",
		"tenants/a/tenant.yaml":      "database: a\n",
		"tenants/a/pipes/top.sql":    "SELECT 2 AS own",
		"tenants/a/pipes/only_a.sql": "SELECT 3",
		"tenants/b.yaml":             "database: b\n",
	})
	ts, findings := pipes.FromSettings(snap)
	if len(findings) > 0 {
		t.Fatalf("findings: %v", findings)
	}
	var live pipes.Live
	if live.Pipes("a") != nil {
		t.Fatal("an empty Live serves pipes")
	}
	live.Store(ts)
	if p, ok := live.Pipes("a").Get("top"); !ok || !strings.Contains(p.SQL, "own") {
		t.Fatalf("tenant a's own top: %+v %v", p, ok)
	}
	if _, ok := live.Pipes("a").Get("only_a"); !ok {
		t.Fatal("tenant a lacks its pipe only_a")
	}
	if p, ok := live.Pipes("b").Get("top"); !ok || !strings.Contains(p.SQL, "shared") {
		t.Fatalf("tenant b's shared top: %+v %v", p, ok)
	}
	if _, ok := live.Pipes("b").Get("only_a"); ok {
		t.Fatal("tenant b sees tenant a's pipe")
	}
}

// TestFromSettingsReportsBrokenPipes names the file of every pipe that does not parse.
func TestFromSettingsReportsBrokenPipes(t *testing.T) {
	snap := loadSettings(t, map[string]string{
		"pipes/bad.sql":             "-- @param\nSELECT 1",
		"tenants/a/tenant.yaml":     "database: a\n",
		"tenants/a/pipes/worse.sql": "-- @param x NoSuchType\nSELECT {x:NoSuchType}",
	})
	_, findings := pipes.FromSettings(snap)
	files := map[string]bool{}
	for _, f := range findings {
		files[f.File] = true
	}
	if len(findings) != 2 || !files["pipes/bad.sql"] || !files["tenants/a/pipes/worse.sql"] {
		t.Fatalf("findings: %+v", findings)
	}
}
