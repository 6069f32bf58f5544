// Package chclients runs the official, unmodified ClickHouse clients against the real wavehouse
// binary's ClickHouse HTTP interface (W14's acceptance): the Node client @clickhouse/client
// (scripts under node/, run with node) and clickhouse-go/v2 in HTTP mode. Each inserts, reads
// back, sees a bad row reported as a ClickHouse error, and a SIGKILL between the acknowledgement
// and the insert into ClickHouse loses nothing. The Node scripts run against ClickHouse itself
// too, so what the tests expect of the gateway is what ClickHouse does.
package chclients

import (
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "chclients", LeakCheck: true}, &binaryPath))
}
