package main

import (
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestServeSetsAndLogsTheMemoryLimit: memory.limit reaches the Go runtime at boot and the boot
// log says which limit and where it came from.
func TestServeSetsAndLogsTheMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")

	var buf logbuf.Buffer
	bootMemoryLimit(config.Memory{Limit: 200 << 20, CgroupPercent: 80}, slog.New(slog.NewJSONHandler(&buf, nil)))
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Fatalf("runtime memory limit = %d, want 200 MiB", got)
	}
	if out := buf.String(); !strings.Contains(out, `"gomemlimit_bytes":"209715200","source":"memory.limit"`) {
		t.Fatalf("boot log does not state the limit and its source: %s", out)
	}
}
