// Package chaos proves the write path's guarantees from outside: it drives the real binary with
// sustained unkeyed and keyed NDJSON ingest while faults strike at seeded random moments —
// SIGKILL of the all-in-one process (on chDB, and on a ReplicatedMergeTree table of the 2 × 2
// ClickHouse 18.16 cluster) and of each role of a split deployment, a ClickHouse server
// restart, a NATS R3 member killed, Redis and dynalite restarted — then waits until the queue has
// drained and counts, id by id, what ClickHouse holds: acknowledged rows lost, rows stored more
// than once. Any loss fails; a duplicate fails where the table deduplicates (the embedded chDB
// default with a deduplication window; a Replicated table on 18.16, by block checksum), and is
// reported, with the gateway's in-doubt metric required to have counted it, where it cannot
// (MergeTree on ClickHouse 18.16). The binary is the fault build (--fault-kill-after).
//
// WH_CHAOS_CYCLES sets the faults per scenario (default 2, make chaos: 10), WH_CHAOS_SEED the
// random seed (default: the clock; printed either way), and WH_CHAOS_REPORT a file the scenario
// table is written to in Markdown.
package chaos

import (
	"fmt"
	"os"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
)

// binaryPath is the wavehouse binary built once by TestMain for every test of the package.
var binaryPath string

// results collects one row per scenario for the table TestMain prints at the end.
var results = &report{}

func TestMain(m *testing.M) {
	os.Exit(gatewaybin.Main(m, gatewaybin.Suite{Name: "chaos", Faults: true, LeakCheck: true, After: func(code int) int {
		if err := results.write(os.Stdout, os.Getenv("WH_CHAOS_REPORT")); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: writing the report:", err)
			return 1
		}
		return code
	}}, &binaryPath))
}
