package capacity

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Capacities are the per-unit limits a simulation is checked against. The defaults are the
// numbers measured on the development VM (docs/benchmarks.md), lower bounds for real hardware,
// except ShardPartsPerSec, which is a stated assumption (see docs/scaling.md).
type Capacities struct {
	IngestRowsPerSec     float64 // rows/s one ingest process drains
	PartitionBytesPerSec float64 // bytes/s one partition stream takes
	NATSServerBytesPerS  float64 // bytes/s one NATS server stores (all its stream copies)
	ShardPartsPerSec     float64 // parts/s one ClickHouse shard creates and merges
	ShardRowsPerSec      float64 // rows/s one ClickHouse shard inserts
}

// DefaultCapacities are the documented defaults of the flags.
func DefaultCapacities() Capacities {
	return Capacities{
		// W18: 1 ingest process drained 2M rows into the 2 × 2 cluster at 394k rows/s end to end.
		IngestRowsPerSec: 390_000,
		// W18: one api process and one nats-server accepted 602k rows/s (~32-byte NDJSON rows,
		// 19 MB/s) into 4 partition streams: 4.8 MB/s per stream, 19 MB/s per server.
		PartitionBytesPerSec: 4_800_000,
		NATSServerBytesPerS:  19_000_000,
		// Assumed, not measured as a sustained limit: W4's direct HTTP client made 3,403 inserts
		// (170 parts/s) into one 18.16 server in 20 s; 100 leaves the merges headroom.
		ShardPartsPerSec: 100,
		// W2: the raw clickhouse-go client inserted 380k–474k rows/s into one 18.16 server.
		ShardRowsPerSec: 450_000,
	}
}

// Resource is one line of the report: the load on the busiest unit of a resource and that
// unit's capacity (0: reported only, no limit).
type Resource struct {
	Name     string
	Unit     string
	Load     float64
	Capacity float64
}

// Over reports whether the load exceeds the capacity.
func (r Resource) Over() bool { return r.Capacity > 0 && r.Load > r.Capacity }

// Use is load / capacity (0 without a capacity).
func (r Resource) Use() float64 {
	if r.Capacity <= 0 {
		return 0
	}
	return r.Load / r.Capacity
}

// Report is a simulation checked against capacities.
type Report struct {
	Config     Config
	Counts     Counts
	Resources  []Resource
	Bottleneck string // the resource with the highest use
}

// Failed lists the resources over their capacity.
func (r Report) Failed() []string {
	var out []string
	for _, x := range r.Resources {
		if x.Over() {
			out = append(out, fmt.Sprintf("%s: %s over %s %s", x.Name, num(x.Load), num(x.Capacity), x.Unit))
		}
	}
	return out
}

// Check simulates c and compares every resource with caps.
func Check(c Config, caps Capacities) Report {
	n := Simulate(c)
	totalBytes := 0.0
	for _, b := range n.BytesPerSecPerPart {
		totalBytes += b
	}
	rep := Report{Config: c, Counts: n, Resources: []Resource{
		{"ingest rows/s per process", "rows/s", c.RowsPerSec / float64(c.IngestProcs), caps.IngestRowsPerSec},
		{"partition stream bytes/s (busiest)", "B/s", slices.Max(n.BytesPerSecPerPart), caps.PartitionBytesPerSec},
		{"NATS server bytes/s (busiest, all copies)", "B/s", slices.Max(n.BytesPerSecPerServer), caps.NATSServerBytesPerS},
		{"NATS replication bytes/s (copies after the first)", "B/s", totalBytes * float64(c.NATSReplicas-1), 0},
		{"shard parts/s (busiest)", "parts/s", slices.Max(n.PartsPerSecPerShard), caps.ShardPartsPerSec},
		{"shard rows/s (busiest)", "rows/s", slices.Max(n.RowsPerSecPerShard), caps.ShardRowsPerSec},
		{"busiest table rows/s per process (one insert in flight)", "rows/s", n.MaxTableRowsPerProc, oneInFlight(c)},
		{"insert in flight, busiest table per process", "share of time", n.MaxInFlight, 0},
		{"inserts/s per ingest process", "inserts/s", n.InsertsPerSecPerProc, 0},
		{"rows per insert (mean)", "rows", n.RowsPerInsert, 0},
		{"flush timers armed per process (mean)", "tables", n.TimersArmed, 0},
		{"tables per partition (busiest)", "tables", float64(slices.Max(n.TablesPerPartition)), 0},
		{"replica part fetches/s per shard (busiest)", "fetches/s", slices.Max(n.PartsPerSecPerShard) * float64(c.Replicas-1), 0},
		{"ZooKeeper block ids written/s (all shards)", "writes/s", sum(n.PartsPerSecPerShard), 0},
	}}
	best := -1.0
	for _, x := range rep.Resources {
		if x.Capacity > 0 && x.Use() > best {
			best, rep.Bottleneck = x.Use(), x.Name
		}
	}
	return rep
}

// oneInFlight is the most rows/s one table gets through one process when inserts of a table
// follow each other: the largest batch (max(max_rows, 1,048,576) rows, at most max_bytes) once
// per insert latency. 0 (no limit) when inserts take no time.
func oneInFlight(c Config) float64 {
	if c.InsertLatency <= 0 {
		return 0
	}
	return float64(batchRows(c)) / c.InsertLatency.Seconds()
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// WriteText prints the report as a Markdown table plus the bottleneck and the verdict.
func (r Report) WriteText(w io.Writer) error {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "%d tenants × %d tables, %s rows/s (zipf %g), %d-byte rows; %d partitions, %d ingest processes, "+
		"flush max_rows %d / max_bytes %d / max_wait %s, insert %s; %d shards (sharding %s) × %d replicas; NATS %d servers × %d replicas; "+
		"%s simulated in %s steps after %s\n\n",
		c.Tenants, c.TablesPerTenant, num(c.RowsPerSec), c.Zipf, c.RowBytes, c.Partitions, c.IngestProcs,
		c.MaxRows, c.MaxBytes, c.MaxWait, c.InsertLatency, c.Shards, c.Sharding, c.Replicas, c.NATSServers, c.NATSReplicas,
		c.Duration, c.Step, c.Warmup)
	b.WriteString("| resource | load | capacity | use | unit |\n|---|---|---|---|---|\n")
	for _, x := range r.Resources {
		capacity, use, mark := "—", "—", ""
		if x.Capacity > 0 {
			capacity, use = num(x.Capacity), fmt.Sprintf("%.0f%%", 100*x.Use())
			if x.Over() {
				mark = " OVER"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s%s | %s |\n", x.Name, num(x.Load), capacity, use, mark, x.Unit)
	}
	fmt.Fprintf(&b, "\nbottleneck: %s\n", r.Bottleneck)
	if f := r.Failed(); len(f) > 0 {
		fmt.Fprintf(&b, "FAILED: %s\n", strings.Join(f, "; "))
	} else {
		b.WriteString("ok: every resource within its capacity\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num prints x with thousands separators, and two decimals below 10.
func num(x float64) string {
	if x < 10 && x != float64(int64(x)) {
		return fmt.Sprintf("%.2f", x)
	}
	s := fmt.Sprintf("%.0f", x)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
