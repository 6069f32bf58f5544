package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/memlimit"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestServeSetsAndLogsTheMemoryLimit: memory.limit reaches the Go runtime at boot and the boot
// log says which limit and where it came from.
func TestServeSetsAndLogsTheMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")

	var buf logbuf.Buffer
	bootMemoryLimit(config.Config{Memory: config.Memory{Limit: 200 << 20, CgroupPercent: 80}}, slog.New(slog.NewJSONHandler(&buf, nil)))
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Fatalf("runtime memory limit = %d, want 200 MiB", got)
	}
	if out := buf.String(); !strings.Contains(out, `"gomemlimit_bytes":"209715200","source":"memory.limit"`) {
		t.Fatalf("boot log does not state the limit and its source: %s", out)
	}
}

// TestServeDefaultsTheMemoryLimit: without memory.limit the limit is the cgroup's share when the
// test runs under a cgroup memory limit, else the default for GOMAXPROCS processors.
func TestServeDefaultsTheMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")

	cg, _ := memlimit.CgroupLimit("/") // unreadable: 0, as at boot (which warns)
	for _, store := range []string{"clickhouse", "chdb"} {
		want, source := memlimit.DefaultLimit(runtime.GOMAXPROCS(0), store == "chdb"), memlimit.SourceDefault
		if cg > 0 {
			want, source = cg/100*80, memlimit.SourceCgroup
		}
		cfg := config.Default()
		cfg.Store.Backend = store
		var buf logbuf.Buffer
		bootMemoryLimit(cfg, slog.New(slog.NewJSONHandler(&buf, nil)))
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Fatalf("store %s: runtime memory limit = %d, want %d (%s)", store, got, want, source)
		}
		if out := buf.String(); !strings.Contains(out, `"source":"`+source+`"`) {
			t.Fatalf("store %s: boot log does not name the source %s: %s", store, source, out)
		}
	}
}

// TestMemoryConfigCountsTheEngine: the engine's larger share applies when this process runs the
// store and the store is chdb, not otherwise.
func TestMemoryConfigCountsTheEngine(t *testing.T) {
	for _, tc := range []struct {
		store string
		roles config.Roles
		want  bool
	}{
		{"chdb", config.Roles{config.RoleAPI, config.RoleIngest, config.RoleSweeper}, true},
		{"clickhouse", config.Roles{config.RoleAPI, config.RoleIngest, config.RoleSweeper}, false},
		{"chdb", config.Roles{config.RoleSweeper}, false},
		{"clickhouse", config.Roles{config.RoleIngest}, false},
	} {
		cfg := config.Default()
		cfg.Store.Backend, cfg.Roles = tc.store, tc.roles
		cfg.Memory.Limit, cfg.Memory.CgroupPercent = 123, 45
		got := memoryConfig(cfg)
		if got.Engine != tc.want || got.Limit != 123 || got.CgroupPercent != 45 {
			t.Errorf("store %s, roles %v: %+v, want Engine %v with the memory block's limit and percent", tc.store, tc.roles, got, tc.want)
		}
	}
}
