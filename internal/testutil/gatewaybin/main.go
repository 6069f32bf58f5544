package gatewaybin

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Suite is what a suite that drives the binary asks of Main.
type Suite struct {
	// Name starts the messages Main prints (the suite's package name).
	Name string
	// Faults builds the binary with FaultsTag (BuildWithFaults) instead of Build.
	Faults bool
	// LeakCheck fails a suite whose tests passed when goroutines are left (goleak): every
	// gateway, server and client a test started must be gone with it.
	LeakCheck bool
	// Before runs once the binary is built, before the tests; an error fails the suite, and
	// cleanup (when not nil) runs after them.
	Before func() (cleanup func(), err error)
	// After runs after the tests with their exit code and returns the suite's (a report that
	// cannot be written, secrets found in the processes' output); it runs before the leak check.
	After func(code int) int
}

// Main is the TestMain of a suite that drives the real binary: it builds the binary once into
// *binary, runs the tests and returns the exit code for os.Exit.
func Main(m *testing.M, s Suite, binary *string) int {
	build := Build
	if s.Faults {
		build = BuildWithFaults
	}
	path, cleanup, err := build()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
		return 1
	}
	defer cleanup()
	*binary = path
	if s.Before != nil {
		done, err := s.Before()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
			return 1
		}
		if done != nil {
			defer done()
		}
	}
	code := m.Run()
	if s.After != nil {
		code = s.After(code)
	}
	if code == 0 && s.LeakCheck {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: leaked goroutines: %v\n", s.Name, err)
			return 1
		}
	}
	return code
}
