// Package knob reads the integer environment variables that size a test or benchmark run
// (WH_TEST_KILL_CYCLES, WH_CHAOS_CYCLES, …): one parser and one error message for all suites.
package knob

import (
	"os"
	"strconv"
	"testing"
)

// Int returns the environment variable name as an integer, def when it is unset. A value that
// is not an integer or is below min fails the test at once, naming the variable.
func Int(t testing.TB, name string, def, min int64) int64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < min {
		t.Fatalf("%s=%q: want an integer >= %d", name, s, min)
	}
	return v
}
