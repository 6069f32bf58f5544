package capacity

import (
	"math"
	"time"
)

// Counts is what one simulation counted over Config.Duration (after Config.Warmup), in units
// per second of simulated time.
type Counts struct {
	Tables []Table

	InsertsPerSec        float64   // inserts by all ingest processes
	InsertsPerSecPerProc float64   // inserts by one ingest process
	RowsPerInsert        float64   // mean rows of one insert
	PartsPerSecPerShard  []float64 // parts created on each shard
	RowsPerSecPerShard   []float64 // rows inserted into each shard
	BytesPerSecPerPart   []float64 // bytes published into each partition stream
	TablesPerPartition   []int
	BytesPerSecPerServer []float64 // bytes each NATS server stores (every copy of every stream)
	MaxTableRowsPerProc  float64   // rows/s of the busiest table through one process
	MaxInFlight          float64   // largest share of time one table of one process had an insert in flight
	TimersArmed          float64   // mean tables per process with buffered rows (a flush timer running)
}

// tableSim is one table in one ingest process: every process sees the same share of the table's
// frames, so one copy stands for all of them.
type tableSim struct {
	rate     float64 // rows/s seen by this process
	arrived  int64   // rows arrived so far
	buf      int64   // rows buffered
	oldest   time.Duration
	inflight bool
	doneAt   time.Duration

	inserts, rows int64
	busySteps     int64
	armedSteps    int64
	shardParts    float64 // shards reached per insert, summed (ShardAll: expected value)
}

// arrivedBy is how many rows have arrived by t: a steady stream, rounded down.
func (s *tableSim) arrivedBy(t time.Duration) int64 {
	x := s.rate * t.Seconds()
	return int64(math.Floor(x*(1+1e-12) + 1e-9))
}

// Simulate runs the model of c. It is deterministic: the same Config gives the same Counts.
func Simulate(c Config) Counts {
	tables := Tables(c)
	sims := make([]tableSim, len(tables))
	for i, t := range tables {
		sims[i].rate = t.RowsPerSec / float64(c.IngestProcs)
	}
	batchRows := batchRows(c)
	steps := int64((c.Warmup + c.Duration) / c.Step)
	warmSteps := int64(c.Warmup / c.Step)
	for i := range sims {
		s := &sims[i]
		for k := int64(1); k <= steps; k++ {
			now := time.Duration(k) * c.Step
			counted := k > warmSteps
			if a := s.arrivedBy(now); a > s.arrived {
				if s.buf == 0 {
					s.oldest = now - c.Step // the rows arrived during the step that ends now
				}
				s.buf += a - s.arrived
				s.arrived = a
			}
			if s.inflight && now >= s.doneAt {
				s.inflight = false
			}
			full := s.buf >= int64(c.MaxRows) || s.buf*int64(c.RowBytes) >= int64(c.MaxBytes)
			if !s.inflight && s.buf > 0 && (full || now-s.oldest >= c.MaxWait) {
				n := min(s.buf, batchRows)
				s.buf -= n
				if c.InsertLatency > 0 {
					s.inflight, s.doneAt = true, now+c.InsertLatency
				}
				if counted {
					s.inserts++
					s.rows += n
					s.shardParts += shardsReached(c, n)
				}
			}
			if counted {
				if s.inflight {
					s.busySteps++
				}
				if s.buf > 0 {
					s.armedSteps++
				}
			}
		}
	}
	return count(c, tables, sims, steps-warmSteps)
}

// batchRows is the most rows one insert takes: everything buffered up to max_bytes and
// max(max_rows, 1,048,576) rows.
func batchRows(c Config) int64 {
	return min(int64(max(c.MaxRows, maxBatchRows)), int64(max(1, c.MaxBytes/c.RowBytes)))
}

// shardsReached is how many shards one insert of n rows reaches: one in ShardTenant mode; in
// ShardAll mode the expected count when n rows are spread uniformly over the shards.
func shardsReached(c Config, n int64) float64 {
	if c.Sharding == ShardTenant || c.Shards == 1 {
		return 1
	}
	return float64(c.Shards) * (1 - math.Pow(1-1/float64(c.Shards), float64(n)))
}

func count(c Config, tables []Table, sims []tableSim, countedSteps int64) Counts {
	secs := c.Duration.Seconds()
	procs := float64(c.IngestProcs)
	out := Counts{
		Tables:               tables,
		PartsPerSecPerShard:  make([]float64, c.Shards),
		RowsPerSecPerShard:   make([]float64, c.Shards),
		BytesPerSecPerPart:   make([]float64, c.Partitions),
		TablesPerPartition:   make([]int, c.Partitions),
		BytesPerSecPerServer: make([]float64, c.NATSServers),
	}
	var inserts, rows, armed int64
	for i, t := range tables {
		s := sims[i]
		inserts += s.inserts
		rows += s.rows
		armed += s.armedSteps
		out.MaxTableRowsPerProc = max(out.MaxTableRowsPerProc, s.rate)
		out.MaxInFlight = max(out.MaxInFlight, float64(s.busySteps)/float64(countedSteps))
		out.BytesPerSecPerPart[t.Partition] += t.RowsPerSec * float64(c.RowBytes)
		out.TablesPerPartition[t.Partition]++
		if t.Shard >= 0 {
			out.PartsPerSecPerShard[t.Shard] += procs * float64(s.inserts) / secs
			out.RowsPerSecPerShard[t.Shard] += procs * float64(s.rows) / secs
			continue
		}
		for sh := range c.Shards {
			out.PartsPerSecPerShard[sh] += procs * s.shardParts / float64(c.Shards) / secs
			out.RowsPerSecPerShard[sh] += procs * float64(s.rows) / float64(c.Shards) / secs
		}
	}
	for p, b := range out.BytesPerSecPerPart {
		for r := range c.NATSReplicas {
			out.BytesPerSecPerServer[(p+r)%c.NATSServers] += b
		}
	}
	out.InsertsPerSecPerProc = float64(inserts) / secs
	out.InsertsPerSec = procs * out.InsertsPerSecPerProc
	if inserts > 0 {
		out.RowsPerInsert = float64(rows) / float64(inserts)
	}
	out.TimersArmed = float64(armed) / float64(countedSteps)
	return out
}
