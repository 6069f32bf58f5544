package chaos

import (
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/knob"
)

// Knobs of a run, read from the environment (package doc).
const (
	envCycles = "WH_CHAOS_CYCLES"
	envSeed   = "WH_CHAOS_SEED"
	envReport = "WH_CHAOS_REPORT"
)

// defaultCycles is the faults per scenario of the short run in make test.
const defaultCycles = 2

// Faults strike between minFaultDelay and maxFaultDelay after the previous one recovered (and
// the load made progress again); outages last between minOutage and maxOutage.
const (
	minFaultDelay = 500 * time.Millisecond
	maxFaultDelay = 4 * time.Second
	minOutage     = 500 * time.Millisecond
	maxOutage     = 3 * time.Second
)

// cycles returns WH_CHAOS_CYCLES, or defaultCycles.
func cycles(t *testing.T) int {
	t.Helper()
	return int(knob.Int(t, envCycles, defaultCycles, 1))
}

// seed returns WH_CHAOS_SEED, or one from the clock.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv(envSeed)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want an unsigned integer", envSeed, s)
	}
	return n
}

// scenarioRand is the random source of one scenario: the run's seed mixed with the scenario's
// name, so a scenario replays the same fault moments whatever else runs.
func scenarioRand(seed uint64, scenario string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(scenario))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// between returns a random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}
