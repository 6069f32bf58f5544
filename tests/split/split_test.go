package split

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"

	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
)

// splitTable is the table every split test ingests into.
const splitTable = "events"

// historyWindow and sweepInterval are stream.history_window and sweeper.interval of every
// process (splitdeploy.Backends.Config).
const (
	historyWindow = splitdeploy.HistoryWindow
	sweepInterval = splitdeploy.SweepInterval
)

// topology is the running split deployment: two api, two ingest and two sweeper processes.
type topology struct {
	b        *backends
	apis     []*proc
	ingests  []*proc
	sweepers []*proc
}

// startTopology starts the six processes over b and creates the test table.
func startTopology(t *testing.T, b *backends) *topology {
	t.Helper()
	top := &topology{b: b}
	for i := range 2 {
		top.apis = append(top.apis, startProc(t, b, fmt.Sprintf("api-%d", i+1), roleAPI))
	}
	for i := range 2 {
		top.ingests = append(top.ingests, startProc(t, b, fmt.Sprintf("ingest-%d", i+1), roleIngest))
	}
	for i := range 2 {
		top.sweepers = append(top.sweepers, startProc(t, b, fmt.Sprintf("sweeper-%d", i+1), roleSweeper))
	}
	top.apis[0].sql(t, "CREATE TABLE "+splitTable+" (id String, n UInt64) ENGINE = MergeTree() ORDER BY id")
	return top
}

// sweeper returns the sweeper process with that instance name.
func (top *topology) sweeper(t *testing.T, name string) *proc {
	t.Helper()
	for _, p := range top.sweepers {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no sweeper %q", name)
	return nil
}

// TestSplitProcesses runs 2 api, 2 ingest and 2 sweeper processes over one NATS JetStream
// server enforcing the generated per-role permissions (each role its own user), Redis, dynalite
// and ClickHouse; ingests through both api processes; kills -9 one ingest process and the
// sweeper holding the lease mid-load and restarts them. Every row that got a 2xx must reach
// ClickHouse; at every sample at most one sweeper holds the lease and tokens increase across takeovers; the queue's history is trimmed while nothing unacknowledged
// is lost; and a query through one api is never stale after an insert through the other.
func TestSplitProcesses(t *testing.T) {
	b := sharedBackends(t, nil, 1)
	nats := b.StartNATS(t, binaryPath)
	top := startTopology(t, b)
	leases := watchLeases(t, top.sweepers)
	acks := newAckLog()
	stopLoad := startLoad(t, top.apis, splitTable, 2, acks)

	// Under load, the sweeper trims history older than the 5 s window (behind the ack floor),
	// keeping every frame for the duplicate window (idempotency keys are on).
	var trimmedTo uint64
	poll.Until(t, splitdeploy.DuplicateWindow+60*time.Second, "the ingest stream's history to be trimmed (first_seq > 1)", func() bool {
		s, ok := ingestStream(t, nats.MonitorURL, b.Prefix)
		trimmedTo = s.State.FirstSeq
		return ok && s.State.FirstSeq > 1
	})
	t.Logf("history trimmed under load: first_seq %d after %d acknowledged requests", trimmedTo, acks.acked())

	// Mid-load: kill -9 one ingest process and the sweeper that holds the lease.
	poll.Until(t, 30*time.Second, "a sweeper to hold the lease", func() bool { return leases.holder() != "" })
	holder := top.sweeper(t, leases.holder())
	mark := acks.acked()
	top.ingests[0].kill(t)
	holder.kill(t)
	killedAt := time.Now()
	poll.Until(t, 30*time.Second, "the other sweeper to take the lease over", func() bool {
		h := leases.holder()
		return h != "" && h != holder.Name
	})
	t.Logf("%s took the lease %s after %s was killed", leases.holder(), time.Since(killedAt).Round(time.Millisecond), holder.Name)
	poll.Until(t, 60*time.Second, "ingest to continue with one ingest process", func() bool { return acks.acked() >= mark+40 })

	top.ingests[0].start(t)
	holder.start(t)
	mark = acks.acked()
	poll.Until(t, 60*time.Second, "ingest to continue after the restarts", func() bool { return acks.acked() >= mark+40 })

	// With no ingest process at all, accepted rows stay unacknowledged well past the history
	// window while the sweeper keeps sweeping: it must keep them (the ack floor), and they are
	// inserted once ingest is back.
	for _, p := range top.ingests {
		p.kill(t)
	}
	stoppedAt := time.Now()
	poll.Until(t, 60*time.Second, "a backlog older than the history window", func() bool {
		return acks.sentAfter(stoppedAt) >= 40 && time.Since(stoppedAt) > historyWindow+3*sweepInterval
	})
	if s, ok := ingestStream(t, nats.MonitorURL, b.Prefix); !ok || s.State.Messages == 0 {
		t.Fatalf("stream %s retains %d messages with nothing consumed for %s: the unacknowledged backlog was trimmed",
			s.Name, s.State.Messages, time.Since(stoppedAt).Round(time.Millisecond))
	} else {
		t.Logf("with ingest down for %s, stream %s retains %d messages (first_seq %d)", time.Since(stoppedAt).Round(time.Millisecond), s.Name, s.State.Messages, s.State.FirstSeq)
	}
	for _, p := range top.ingests {
		p.start(t)
	}
	stopLoad()

	// The killed ingest process's deliveries come back after the queue's ack wait (30 s).
	requireAllAcked(t, b, splitTable, acks, 120*time.Second)

	// The new lease holder keeps trimming: history moves on past what was trimmed before the
	// kills, and yet (above) no acknowledged row was lost.
	poll.Until(t, 60*time.Second, "the new holder to trim further", func() bool {
		s, ok := ingestStream(t, nats.MonitorURL, b.Prefix)
		return ok && s.State.FirstSeq > trimmedTo && s.State.FirstSeq > 1
	})
	s, _ := ingestStream(t, nats.MonitorURL, b.Prefix)
	t.Logf("stream %s after the run: first_seq %d, last_seq %d, %d messages retained", s.Name, s.State.FirstSeq, s.State.LastSeq, s.State.Messages)

	if terms := leases.check(t); len(terms) < 2 {
		t.Errorf("observed lease terms %+v: want a takeover after the holder was killed", terms)
	}
	requireSharedCache(t, top)
}

// requireSharedCache caches a count through api A, inserts through api B, and requires api A
// (and B) to answer the new count once ClickHouse has the rows: the insert's invalidation went
// through the shared Redis.
func requireSharedCache(t *testing.T, top *topology) {
	t.Helper()
	a, bAPI := top.apis[0], top.apis[1]
	n0 := top.b.serverCount(t, splitTable)
	poll.Until(t, 10*time.Second, "api A to answer the stored count", func() bool { n, _ := a.count(t, splitTable); return n == n0 })
	if n, cache := a.count(t, splitTable); n != n0 || cache != "HIT" {
		t.Fatalf("api A: count %d (X-Cache %s), want %d from the cache (HIT)", n, cache, n0)
	}
	var body strings.Builder
	const extra = 7
	for i := range extra {
		fmt.Fprintf(&body, "{\"id\":\"cache-%d\",\"n\":%d}\n", i, i)
	}
	r, err := bAPI.try(t.Context(), http.MethodPost, "/v1/ingest/"+splitTable, "application/x-ndjson", []byte(body.String()))
	if err != nil || r.Status/100 != 2 {
		t.Fatalf("ingest through api B: %v %s", err, r)
	}
	poll.Until(t, 30*time.Second, "the rows inserted through api B to be in ClickHouse", func() bool {
		return top.b.serverCount(t, splitTable) == n0+extra
	})
	// The table version is bumped right after the insert returns (one Redis round trip), so
	// api A's answer may trail ClickHouse by that much, never by a cache lifetime.
	start := time.Now()
	var n int
	var cache string
	poll.Until(t, 3*time.Second, "api A to stop answering the cached count", func() bool {
		n, cache = a.count(t, splitTable)
		return n == n0+extra
	})
	t.Logf("api A answered %d (X-Cache %s) %s after ClickHouse had the rows", n, cache, time.Since(start).Round(time.Millisecond))
	if nb, _ := bAPI.count(t, splitTable); nb != n0+extra {
		t.Fatalf("api B: count %d, want %d", nb, n0+extra)
	}
}

// TestSplitNATSClusterFailover runs the same split deployment over a 3-node JetStream cluster
// enforcing the generated per-role permissions,
// with streams and the lease bucket at R3, kills -9 the server that leads the ingest stream
// mid-load, and requires ingest to refuse only with 503 and Retry-After, briefly, before it
// continues on the new leader; every row that got a 2xx to reach ClickHouse; and the lease
// bucket to keep at most one holder throughout.
func TestSplitNATSClusterFailover(t *testing.T) {
	b := sharedBackends(t, nil, 3)
	cluster := b.StartNATSCluster(t, binaryPath, 3)
	top := startTopology(t, b)
	leases := watchLeases(t, top.sweepers)
	acks := newAckLog()
	stopLoad := startLoad(t, top.apis, splitTable, 2, acks)
	poll.Until(t, 60*time.Second, "acknowledged ingest on the cluster", func() bool { return acks.acked() >= 40 })
	poll.Until(t, 30*time.Second, "a sweeper to hold the lease", func() bool { return leases.holder() != "" })

	var stream streamState
	poll.Until(t, 30*time.Second, "the ingest stream's leader", func() bool {
		s, ok := ingestStream(t, cluster.Nodes[0].MonitorURL, b.Prefix)
		stream = s
		return ok && s.Cluster != nil && s.Cluster.Leader != ""
	})
	leader := -1
	for i := range cluster.Nodes {
		if stream.Cluster.Leader == fmt.Sprintf("%s-%d", cluster.Name, i) {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatalf("stream %s leader %q is none of the cluster's nodes", stream.Name, stream.Cluster.Leader)
	}
	cluster.Kill(t, leader)
	killedAt := time.Now()
	poll.Until(t, 60*time.Second, "ingest to continue on the new stream leader", func() bool { return acks.sentAfter(killedAt) > 0 })
	resumed := time.Since(killedAt)
	poll.Until(t, 60*time.Second, "sustained ingest after the failover", func() bool { return acks.sentAfter(killedAt) >= 40 })
	other := cluster.Nodes[(leader+1)%len(cluster.Nodes)]
	if s, ok := ingestStream(t, other.MonitorURL, b.Prefix); ok && s.Cluster != nil {
		t.Logf("killed %s (leader of %s); the first request sent after the kill was acknowledged within %s; new leader %s",
			stream.Cluster.Leader, stream.Name, resumed.Round(time.Millisecond), s.Cluster.Leader)
	}
	cluster.Start(t, leader)
	restarted := time.Now()
	poll.Until(t, 60*time.Second, "ingest with the node back", func() bool { return acks.sentAfter(restarted) >= 40 })
	stopLoad()

	// Every refusal is a 503 with Retry-After, and refusals stop soon after the kill.
	const brief = 20 * time.Second
	acks.mu.Lock()
	var during int
	var last time.Time
	for _, r := range acks.refused {
		if r.Status != http.StatusServiceUnavailable || r.RetryAfter == "" {
			t.Errorf("%s answered %d (Retry-After %q) at %+.3fs from the kill: %.200s", r.Via, r.Status, r.RetryAfter, r.At.Sub(killedAt).Seconds(), r.Body)
		}
		if r.At.After(killedAt) {
			during++
			last = r.At
		}
	}
	acks.mu.Unlock()
	if during > 0 {
		t.Logf("%d refusals (503 + Retry-After) after the kill, the last %s after it", during, last.Sub(killedAt).Round(time.Millisecond))
		if last.Sub(killedAt) > brief {
			t.Errorf("ingest still refused %s after the stream leader was killed, want at most %s", last.Sub(killedAt), brief)
		}
	}
	if resumed > brief {
		t.Errorf("the first request after the kill was acknowledged only after %s, want within %s", resumed, brief)
	}

	requireAllAcked(t, b, splitTable, acks, 120*time.Second)
	if terms := leases.check(t); len(terms) < 1 {
		t.Errorf("no sweeper held the lease on the cluster")
	}
}
