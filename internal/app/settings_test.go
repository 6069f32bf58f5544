package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestPipesReloadWithoutRestart adds a pipe to settings_dir/pipes while the process runs, then
// breaks it: the pipe is served once written, and a directory that no longer loads keeps the
// previous pipes in force.
func TestPipesReloadWithoutRestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.SettingsDir = t.TempDir()
	dir := filepath.Join(cfg.SettingsDir, "pipes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	a := startAppWithLog(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	base := "http://" + a.APIAddr()
	if r := call(t, "GET", base+"/v1/pipes", "", ""); r.code != 200 || strings.Contains(r.raw, "plus") {
		t.Fatalf("before: %d %s", r.code, r.raw)
	}
	pipe := "-- @param x UInt32 required a number\nSELECT {x:UInt32} + 1 AS y\n"
	if err := os.WriteFile(filepath.Join(dir, "plus.sql"), []byte(pipe), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the edited pipe served", func() bool {
		return strings.Contains(call(t, "GET", base+"/v1/pipes/plus?x=41", "", "").raw, `"y":42`)
	})
	if err := os.WriteFile(filepath.Join(dir, "broken.sql"), []byte("-- @param\nDROP TABLE x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the refused reload logged", func() bool { return strings.Contains(logs.String(), "settings reload refused") })
	if r := call(t, "GET", base+"/v1/pipes/plus?x=1", "", ""); !strings.Contains(r.raw, `"y":2`) {
		t.Fatalf("an invalid edit replaced the served pipes: %d %s", r.code, r.raw)
	}
}
