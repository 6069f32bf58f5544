// Package tenants_test is the acceptance suite of tenants, API keys and limits
// (docs/tenants.md). It runs the real wavehouse binary (all roles, embedded queue, chDB) with a
// settings directory per gateway and checks, over HTTP only: isolation between tenants on every
// route with every kind of key, reloads of keys, limits and pipes without a restart, the secure
// default at boot, that no secret ever reaches the output of any process or of config check,
// and, under load, that a tenant over its rate is refused while another never is
// (BenchmarkLimitsNeighbour measures how much the first slows the second).
package tenants_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "tenants", LeakCheck: true, Before: func() (func(), error) {
		dir, err := os.MkdirTemp("", "wh-tenants-output-")
		secrets.dir = dir
		return func() { os.RemoveAll(dir) }, err
	}, After: func(code int) int {
		// Every process of every test wrote its output under secrets.dir; none of it may hold a
		// secret the suite created.
		if leaks := secrets.scan(); len(leaks) > 0 {
			for _, l := range leaks {
				fmt.Fprintln(os.Stderr, "tenants: SECRET LEAKED:", l)
			}
			return 1
		}
		fmt.Fprintf(os.Stderr, "tenants: %s\n", secrets.summary())
		return code
	}}, &binaryPath))
}
