package capacity

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// small is 4 tenants with one table each at 1,000 rows/s each, 2 shards, one ingest process,
// flushes by max_wait 1 s, inserts that take no time, 10 s counted from the start.
func small() Config {
	return Config{
		Tenants: 4, TablesPerTenant: 1, RowsPerSec: 4000, RowBytes: 100,
		Partitions: 4, IngestProcs: 1, NATSReplicas: 1, NATSServers: 1,
		MaxRows: 10_000, MaxBytes: 16 << 20, MaxWait: time.Second,
		Shards: 2, Sharding: ShardAll, Replicas: 2,
		Step: 10 * time.Millisecond, Duration: 10 * time.Second,
	}
}

func eqSlice(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", name, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: %v, want %v", name, got, want)
			return
		}
	}
}

// Each table flushes at 1, 2, …, 10 s with 1,000 rows; in mode all every insert makes one part
// on each of the 2 shards: 4 tables × 1 insert/s = 4 parts/s per shard, 2,000 rows/s per shard.
func TestSimulateMaxWaitShardAll(t *testing.T) {
	n := Simulate(small())
	if n.InsertsPerSec != 4 || n.RowsPerInsert != 1000 {
		t.Errorf("inserts/s %v, rows/insert %v; want 4, 1000", n.InsertsPerSec, n.RowsPerInsert)
	}
	eqSlice(t, "parts/s per shard", n.PartsPerSecPerShard, []float64{4, 4})
	eqSlice(t, "rows/s per shard", n.RowsPerSecPerShard, []float64{2000, 2000})
}

// Shard by tenant: tenants 0 and 2 on shard 0, 1 and 3 on shard 1; one part per insert.
func TestSimulateShardTenant(t *testing.T) {
	c := small()
	c.Sharding = ShardTenant
	n := Simulate(c)
	eqSlice(t, "parts/s per shard", n.PartsPerSecPerShard, []float64{2, 2})
	eqSlice(t, "rows/s per shard", n.RowsPerSecPerShard, []float64{2000, 2000})
}

// max_rows 250 at 1,000 rows/s: a flush every 250 ms, 4 per second per table.
func TestSimulateMaxRows(t *testing.T) {
	c := small()
	c.MaxRows = 250
	n := Simulate(c)
	if n.InsertsPerSec != 16 || n.RowsPerInsert != 250 {
		t.Errorf("inserts/s %v, rows/insert %v; want 16, 250", n.InsertsPerSec, n.RowsPerInsert)
	}
	eqSlice(t, "parts/s per shard", n.PartsPerSecPerShard, []float64{16, 16})
}

// max_bytes 10,000 with 100-byte rows: a flush every 100 rows, 10 per second per table.
func TestSimulateMaxBytes(t *testing.T) {
	c := small()
	c.MaxBytes = 10_000
	n := Simulate(c)
	if n.InsertsPerSec != 40 || n.RowsPerInsert != 100 {
		t.Errorf("inserts/s %v, rows/insert %v; want 40, 100", n.InsertsPerSec, n.RowsPerInsert)
	}
}

// Two ingest processes each get half of every table and flush it on their own timer: twice the
// inserts, each half the size.
func TestSimulateProcessesMultiplyInserts(t *testing.T) {
	c := small()
	c.IngestProcs = 2
	n := Simulate(c)
	if n.InsertsPerSec != 8 || n.InsertsPerSecPerProc != 4 || n.RowsPerInsert != 500 {
		t.Errorf("inserts/s %v (per process %v), rows/insert %v; want 8 (4), 500", n.InsertsPerSec, n.InsertsPerSecPerProc, n.RowsPerInsert)
	}
	eqSlice(t, "parts/s per shard", n.PartsPerSecPerShard, []float64{8, 8})
}

// A table slower than one row per max_wait: every row is its own insert. Rows arrive at 2, 4,
// …, 10 s and each is flushed max_wait after the step it arrived in (2.99 s, …): 4 inserts in
// the 10 s counted, the row of 10 s is flushed after them.
func TestSimulateSlowTable(t *testing.T) {
	c := small()
	c.Tenants, c.RowsPerSec, c.Shards = 1, 0.5, 1
	n := Simulate(c)
	if n.InsertsPerSec != 0.4 || n.RowsPerInsert != 1 {
		t.Errorf("inserts/s %v, rows/insert %v; want 0.4, 1", n.InsertsPerSec, n.RowsPerInsert)
	}
}

// One insert in flight: max_rows 100 at 1,000 rows/s would flush every 100 ms, but each insert
// takes 300 ms, so flushes happen at 100, 400, 700, …, 10,000 ms: 34 inserts, the first of 100
// rows and 33 of 300.
func TestSimulateOneInsertInFlight(t *testing.T) {
	c := small()
	c.Tenants, c.RowsPerSec, c.MaxRows, c.InsertLatency = 1, 1000, 100, 300*time.Millisecond
	n := Simulate(c)
	if n.InsertsPerSec != 3.4 || n.RowsPerInsert != 10000.0/34 {
		t.Errorf("inserts/s %v, rows/insert %v; want 3.4, %v", n.InsertsPerSec, n.RowsPerInsert, 10000.0/34)
	}
	if n.MaxInFlight < 0.98 {
		t.Errorf("in flight %v of the time, want ~0.99", n.MaxInFlight)
	}
}

// The counting window starts after the warm-up: the same 4 inserts/s.
func TestSimulateWarmup(t *testing.T) {
	c := small()
	c.Warmup = 3 * time.Second
	if n := Simulate(c); n.InsertsPerSec != 4 {
		t.Errorf("inserts/s %v after warm-up, want 4", n.InsertsPerSec)
	}
}

// Tables map to partitions exactly as the gateway publishes them: the partition token of the
// NATS subject jsmq builds for the table.
func TestTablesUseTheGatewaysPartitionMapping(t *testing.T) {
	c := small()
	c.Tenants, c.TablesPerTenant, c.Partitions = 50, 2, 16
	names := jsmq.Names{Prefix: "wh", Partitions: c.Partitions}
	seen := map[int]bool{}
	for _, tb := range Tables(c) {
		tok := strings.Split(names.Subject(tb.Tenant, tb.Name), ".")[2]
		if p, _ := strconv.Atoi(tok); p != tb.Partition {
			t.Errorf("%s/%s: partition %d, the gateway publishes to %d", tb.Tenant, tb.Name, tb.Partition, p)
		}
		seen[tb.Partition] = true
	}
	if len(seen) < 8 {
		t.Errorf("100 tables reached only %d of 16 partitions", len(seen))
	}
}

// Partition bytes follow the mapping; NATS server p, p+1 hold partition p's two copies.
func TestPartitionAndServerBytes(t *testing.T) {
	c := small()
	c.Partitions, c.NATSServers, c.NATSReplicas = 2, 3, 2
	n := Simulate(c)
	want := make([]float64, 2)
	for _, tb := range n.Tables {
		want[tb.Partition] += tb.RowsPerSec * 100
	}
	eqSlice(t, "bytes/s per partition", n.BytesPerSecPerPart, want)
	eqSlice(t, "bytes/s per server", n.BytesPerSecPerServer, []float64{want[0], want[0] + want[1], want[1]})
}

// Zipf 1 over 2 tenants: shares 1 and 1/2.
func TestTablesZipf(t *testing.T) {
	c := small()
	c.Tenants, c.TablesPerTenant, c.RowsPerSec, c.Zipf = 2, 2, 3000, 1
	tb := Tables(c)
	got := []float64{tb[0].RowsPerSec, tb[1].RowsPerSec, tb[2].RowsPerSec, tb[3].RowsPerSec}
	eqSlice(t, "rows/s per table", got, []float64{1000, 1000, 500, 500})
	if tb[0].Tenant != tb[1].Tenant || tb[0].Name == tb[1].Name {
		t.Errorf("tables %v", tb)
	}
}
