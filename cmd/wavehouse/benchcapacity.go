package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/capacity"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

const benchCapacityUsage = `usage: wavehouse bench capacity [flags]

Simulates the ingest path of a deployment in time steps — tables mapped to partitions by the
gateway's own FNV-1a(tenant, table) mod mq.partitions, each table flushed per ingest process by
max_rows / max_bytes / max_wait with one insert in flight, parts created per shard, partition and
NATS server bytes — and prints per resource the load on its busiest unit against a capacity.
No server is started. The capacity defaults are numbers measured on the 2-core development VM
(docs/benchmarks.md), lower bounds for real hardware, except --cap-shard-parts (an assumption);
see docs/scaling.md. Exit status 1 when a resource is over its capacity.
`

// runBenchCapacity runs `wavehouse bench capacity`; args are everything after "capacity".
func runBenchCapacity(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchCapacityUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	flush := writer.DefaultConfig()
	c := capacity.Config{Sharding: capacity.ShardTenant}
	fs.IntVar(&c.Tenants, "tenants", 10_000, "tenants")
	fs.IntVar(&c.TablesPerTenant, "tables-per-tenant", 1, "ingest tables per tenant")
	fs.Float64Var(&c.RowsPerSec, "rows", 1_000_000, "rows/s over all tenants")
	fs.Float64Var(&c.Zipf, "zipf", 1, "tenant skew: tenant of rank i gets a share ∝ 1/(i+1)^zipf (0: uniform)")
	fs.IntVar(&c.RowBytes, "row-bytes", 130, "payload bytes per row")
	fs.IntVar(&c.Partitions, "partitions", jsmq.DefaultPartitions, "mq.partitions")
	fs.IntVar(&c.IngestProcs, "ingest-procs", 1, "ingest processes (roles: ingest)")
	fs.IntVar(&c.NATSReplicas, "nats-replicas", 3, "mq.nats.replicas")
	fs.IntVar(&c.NATSServers, "nats-servers", 3, "servers in the NATS cluster (stream p's copies on servers p, p+1, … mod this)")
	fs.IntVar(&c.MaxRows, "max-rows", flush.MaxRows, "ingest.flush.max_rows")
	fs.IntVar(&c.MaxBytes, "max-bytes", flush.MaxBytes, "ingest.flush.max_bytes")
	fs.DurationVar(&c.MaxWait, "max-wait", flush.MaxWait, "ingest.flush.max_wait")
	fs.DurationVar(&c.InsertLatency, "insert-latency", 100*time.Millisecond, "time one insert is in flight (assumed constant)")
	fs.IntVar(&c.Shards, "shards", 1, "ClickHouse shards")
	fs.StringVar(&c.Sharding, "sharding", capacity.ShardTenant, "where a table's batch goes: tenant (one shard per tenant, tenants placed by rank mod shards) or all (every batch to every shard)")
	fs.IntVar(&c.Replicas, "replicas", 2, "ClickHouse replicas per shard")
	fs.DurationVar(&c.Step, "step", 10*time.Millisecond, "simulation time step")
	fs.DurationVar(&c.Warmup, "warmup", 0, "simulated time before counting (0: 2 × max-wait)")
	fs.DurationVar(&c.Duration, "duration", 0, "simulated time counted (0: 10 × max-wait, at least 20s)")
	caps := capacity.DefaultCapacities()
	fs.Float64Var(&caps.IngestRowsPerSec, "cap-ingest-rows", caps.IngestRowsPerSec, "rows/s one ingest process drains (W18, 1 process: 394k)")
	fs.Float64Var(&caps.PartitionBytesPerSec, "cap-partition-bytes", caps.PartitionBytesPerSec, "bytes/s one partition stream takes (W18: 19 MB/s into 4 streams)")
	fs.Float64Var(&caps.NATSServerBytesPerS, "cap-nats-server-bytes", caps.NATSServerBytesPerS, "bytes/s one NATS server stores, all its stream copies (W18: one server, 19 MB/s)")
	fs.Float64Var(&caps.ShardPartsPerSec, "cap-shard-parts", caps.ShardPartsPerSec, "parts/s one ClickHouse shard sustains (assumed; W4 saw 170/s for 20 s)")
	fs.Float64Var(&caps.ShardRowsPerSec, "cap-shard-rows", caps.ShardRowsPerSec, "rows/s one ClickHouse shard inserts (W2 raw client: 380k–474k)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wavehouse bench capacity: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if c.Warmup == 0 {
		c.Warmup = 2 * c.MaxWait
	}
	if c.Duration == 0 {
		c.Duration = max(20*time.Second, 10*c.MaxWait)
	}
	if err := c.Validate(); err != nil {
		fmt.Fprintf(stderr, "wavehouse bench capacity: %v\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 2
	}
	rep := capacity.Check(c, caps)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		rep.Counts.Tables = nil
		_ = enc.Encode(rep)
	} else {
		_ = rep.WriteText(stdout)
	}
	if len(rep.Failed()) > 0 {
		return 1
	}
	return 0
}
