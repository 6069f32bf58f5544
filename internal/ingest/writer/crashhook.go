package writer

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// CrashEnv names the test-only environment variable that makes the writer kill its own process
// (SIGKILL, as an operator's kill -9 or the OOM killer would) at a point of the insert path, so
// that acceptance tests can crash the real binary exactly between an insert and its
// acknowledgement. Its value is "<stage>:<n>": stage "inserted" (after the inserts, before the
// plan is marked) or "marked" (after the mark, before the acks); n counts batches, 1 is the
// first. It is read once, in New; unset (always, outside tests) it costs one nil check per batch.
const CrashEnv = "WH_TEST_CRASH_AFTER_INSERT"

const (
	stageInserted = "inserted"
	stageMarked   = "marked"
)

// crashHook is nil unless CrashEnv is set.
type crashHook struct {
	stage   string
	n       int64
	batches atomic.Int64
}

func crashHookFromEnv() *crashHook {
	v := os.Getenv(CrashEnv)
	stage, n, ok := strings.Cut(v, ":")
	if !ok || stage != stageInserted && stage != stageMarked {
		return nil
	}
	c, err := strconv.ParseInt(n, 10, 64)
	if err != nil || c < 1 {
		return nil
	}
	return &crashHook{stage: stage, n: c}
}

// after kills the process when stage is the configured one and this is the n-th batch.
func (h *crashHook) after(stage string) {
	if h == nil || stage != h.stage {
		return
	}
	if h.batches.Add(1) == h.n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never return into the ack path
	}
}
