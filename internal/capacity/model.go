// Package capacity is the load model behind `wavehouse bench capacity`: a deterministic,
// time-stepped simulation of the ingest path (queue partitions, ingest processes, per-table
// flushes, ClickHouse shards and replicas) that reports, per resource, the load a deployment
// puts on it against a capacity given as a flag. It starts no server.
//
// What is modelled: the table → partition mapping (mq.PartitionOf, the function the gateway
// uses); the writer's flush rule per table and per ingest process (max_rows, max_bytes, max_wait
// after the oldest buffered row, at most one insert in flight per table per process); the parts
// each insert creates (one per shard it reaches); the partition streams' bytes and their copies
// on the NATS servers. What is assumed: rows arrive at a steady rate per table (tenants ranked by
// a Zipf law, a tenant's rate split evenly over its tables), frames of a table are spread evenly
// over the ingest processes, an insert takes a fixed time, and the capacities are the flags.
package capacity

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Sharding modes: where one table's batch goes.
const (
	// ShardAll sends every batch to every shard (a sharding key that spreads each tenant's rows,
	// e.g. intHash64(id)): one part per shard per insert.
	ShardAll = "all"
	// ShardTenant sends a tenant's batches to one shard (a sharding key on the tenant, or a
	// tenant's own cluster): one part per insert. Tenants are placed by rank, i mod shards.
	ShardTenant = "tenant"
)

// maxBatchRows mirrors the writer's cap on one insert (internal/ingest/writer: maxBatchRows).
const maxBatchRows = 1 << 20

// Config is one deployment and its load.
type Config struct {
	Tenants         int     // tenants, ranked 0..Tenants-1 by rate
	TablesPerTenant int     // ingest tables per tenant (named events, events_1, …)
	RowsPerSec      float64 // total rows/s over all tenants
	Zipf            float64 // skew exponent: tenant i gets a share ∝ 1/(i+1)^Zipf (0: uniform)
	RowBytes        int     // payload bytes per row in the queue and in the insert

	Partitions   int // mq.partitions
	IngestProcs  int // processes with the ingest role
	NATSReplicas int // mq.nats.replicas: copies of every partition stream
	NATSServers  int // servers of the NATS cluster; stream p's copies are on servers p, p+1, … mod NATSServers

	MaxRows       int           // ingest.flush.max_rows
	MaxBytes      int           // ingest.flush.max_bytes
	MaxWait       time.Duration // ingest.flush.max_wait
	InsertLatency time.Duration // time one insert is in flight (assumed constant)

	Shards   int    // ClickHouse shards
	Sharding string // ShardAll or ShardTenant
	Replicas int    // ClickHouse replicas per shard

	Step     time.Duration // simulation time step
	Warmup   time.Duration // simulated time before counting starts
	Duration time.Duration // simulated time counted
}

// Validate names every invalid field.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: must be positive", name))
		}
	}
	pos("tenants", c.Tenants > 0)
	pos("tables-per-tenant", c.TablesPerTenant > 0)
	pos("rows", c.RowsPerSec > 0)
	pos("row-bytes", c.RowBytes > 0)
	pos("partitions", c.Partitions > 0)
	pos("ingest-procs", c.IngestProcs > 0)
	pos("nats-replicas", c.NATSReplicas > 0)
	pos("nats-servers", c.NATSServers > 0)
	pos("max-rows", c.MaxRows > 0)
	pos("max-bytes", c.MaxBytes > 0)
	pos("max-wait", c.MaxWait > 0)
	pos("shards", c.Shards > 0)
	pos("replicas", c.Replicas > 0)
	pos("step", c.Step > 0)
	pos("duration", c.Duration > 0)
	if c.Zipf < 0 {
		errs = append(errs, errors.New("zipf: must not be negative"))
	}
	if c.InsertLatency < 0 || c.Warmup < 0 {
		errs = append(errs, errors.New("insert-latency, warmup: must not be negative"))
	}
	if c.NATSReplicas > c.NATSServers {
		errs = append(errs, fmt.Errorf("nats-replicas: %d copies need at least as many nats-servers (%d)", c.NATSReplicas, c.NATSServers))
	}
	if c.Sharding != ShardAll && c.Sharding != ShardTenant {
		errs = append(errs, fmt.Errorf("sharding: %q is not %q or %q", c.Sharding, ShardAll, ShardTenant))
	}
	return errors.Join(errs...)
}

// Table is one ingest table of the model.
type Table struct {
	Tenant, Name string
	RowsPerSec   float64
	Partition    int // mq.PartitionOf(Tenant, Name, Partitions)
	Shard        int // the shard its batches reach in ShardTenant mode; -1 in ShardAll
}

// TableName is the name of a tenant's i-th table.
func TableName(i int) string {
	if i == 0 {
		return "events"
	}
	return fmt.Sprintf("events_%d", i)
}

// TenantName is the id of the tenant of rank i.
func TenantName(i int) string { return fmt.Sprintf("tenant-%05d", i) }

// Tables lays out the tables of c with their rates, partitions and shards.
func Tables(c Config) []Table {
	weights := make([]float64, c.Tenants)
	var sum float64
	for i := range weights {
		weights[i] = 1 / math.Pow(float64(i+1), c.Zipf)
		sum += weights[i]
	}
	out := make([]Table, 0, c.Tenants*c.TablesPerTenant)
	for i, w := range weights {
		tenant := TenantName(i)
		shard := -1
		if c.Sharding == ShardTenant {
			shard = i % c.Shards
		}
		for j := range c.TablesPerTenant {
			name := TableName(j)
			out = append(out, Table{
				Tenant: tenant, Name: name,
				RowsPerSec: c.RowsPerSec * w / sum / float64(c.TablesPerTenant),
				Partition:  mq.PartitionOf(tenant, name, c.Partitions),
				Shard:      shard,
			})
		}
	}
	return out
}
