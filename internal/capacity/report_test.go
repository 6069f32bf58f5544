package capacity

import (
	"strings"
	"testing"
)

// Every batch to every shard: 4 parts/s per shard against a capacity of 3 fails, and that
// resource is the bottleneck; by tenant (2 parts/s per shard) passes.
func TestCheckPartsPerShard(t *testing.T) {
	caps := Capacities{IngestRowsPerSec: 1e9, PartitionBytesPerSec: 1e9, NATSServerBytesPerS: 1e9, ShardPartsPerSec: 3, ShardRowsPerSec: 1e9}
	rep := Check(small(), caps)
	f := rep.Failed()
	if len(f) != 1 || !strings.HasPrefix(f[0], "shard parts/s (busiest): 4 over 3") || rep.Bottleneck != "shard parts/s (busiest)" {
		t.Errorf("failed %q, bottleneck %q", f, rep.Bottleneck)
	}
	c := small()
	c.Sharding = ShardTenant
	rep = Check(c, caps)
	if f := rep.Failed(); len(f) != 0 {
		t.Errorf("by tenant: failed %q", f)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "| shard parts/s (busiest) | 2 | 3 | 67% | parts/s |") || !strings.Contains(b.String(), "ok: every resource") {
		t.Errorf("report:\n%s", b.String())
	}
}

// One insert in flight bounds a table: 10 rows per insert (max_bytes) every 100 ms is 100 rows/s.
func TestCheckOneInFlight(t *testing.T) {
	c := small()
	c.MaxBytes, c.InsertLatency = 1000, 100_000_000
	rep := Check(c, Capacities{})
	if f := rep.Failed(); len(f) != 1 || !strings.HasPrefix(f[0], "busiest table rows/s per process (one insert in flight): 1,000 over 100") {
		t.Errorf("failed %q", f)
	}
}
