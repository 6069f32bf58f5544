package natscoord_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/coordtest"
	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// clusterCoordinator builds a coordinator on its own reconnecting
// connection to every node of cl.
func clusterCoordinator(t *testing.T, cl *testsvc.NATSCluster, cfg natscoord.Config, instance string) (*natscoord.Coordinator, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(cl.URL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	// Renewal failures go to the test's output, so that a lost lease shows why.
	log := slog.New(slog.NewTextHandler(t.Output(), nil)).With("instance", instance)
	c, err := natscoord.New(cfg, natscoord.Deps{JetStream: jetStream(t, nc), Instance: instance, Logger: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, nc
}

// waitBucketReady creates the R3 bucket and waits until its stream has a
// leader that answers reads and takes writes through every node, so that the
// suite starts on a working bucket rather than timing the cluster's election.
// A read answered by the leader is not enough: the leader's subscription to
// the bucket's subjects reaches the other nodes a moment later, and a write
// sent through one of them before that finds no stream ("no responders").
func waitBucketReady(t *testing.T, cl *testsvc.NATSCluster, cfg natscoord.Config) {
	t.Helper()
	c, _ := clusterCoordinator(t, cl, cfg, "setup")
	var nodes []jetstream.JetStream // one handle per node, through that node only
	for _, n := range cl.Nodes {
		nodes = append(nodes, jetStream(t, connect(t, n.URL)))
	}
	ready := func(ctx context.Context) error {
		if _, _, err := c.Holder(ctx, "ready"); err != nil {
			return err
		}
		for i, js := range nodes {
			kv, err := js.KeyValue(ctx, cfg.Bucket)
			if err == nil {
				_, err = kv.Put(ctx, "ready", []byte(cl.Nodes[i].URL))
			}
			if err != nil {
				return fmt.Errorf("write through node %d: %w", i, err)
			}
		}
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease bucket never became readable and writable: %v", err)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// r3Config is testConfig with twice its timings. A write to an R3 bucket
// crosses three processes (client's node, stream leader, a follower for the
// quorum), and with testConfig's 1.3 s step-down a renewal still in flight
// lost the lease in 2 of 20 runs of the suite on the 2-core box at a load
// average of 20 (no renewal had failed: they were slow).
var r3Config = func() natscoord.Config {
	c := testConfig
	c.Lease, c.RenewInterval, c.SafetyMargin = 2*c.Lease, 2*c.RenewInterval, 2*c.SafetyMargin
	c.Replicas = 3
	return c
}()

// TestConformanceR3 runs the suite against a three-node JetStream cluster
// with the lease bucket replicated three times (CAS conflicts are reported
// with a different error code there).
func TestConformanceR3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster")
	}
	cl := testsvc.StartNATSCluster(t, 3)
	coordtest.Run(t, func(t *testing.T) *coordtest.Harness {
		cfg := r3Config
		cfg.Bucket = testsvc.UniqueName(t, "leases")
		waitBucketReady(t, cl, cfg)
		conns := map[coord.Coordinator]*nats.Conn{}
		return &coordtest.Harness{
			New: func(t *testing.T, instance string) coord.Coordinator {
				c, nc := clusterCoordinator(t, cl, cfg, instance)
				conns[c] = nc
				return c
			},
			Kill:  func(t *testing.T, c coord.Coordinator) { conns[c].Close() },
			Lease: cfg.Lease,
			Clock: coord.SystemClock(),
		}
	}, coordtest.Caps{})
}

// TestBucketLeaderKilled kills the node leading the R3 lease bucket while
// two coordinators campaign: at no moment do two jobs run, tokens keep
// increasing, and a job runs again once the cluster has a new leader.
func TestBucketLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster")
	}
	cl := testsvc.StartNATSCluster(t, 3)
	cfg := natscoord.Config{
		Manage:        true,
		Replicas:      3,
		Bucket:        testsvc.UniqueName(t, "leases"),
		Lease:         2 * time.Second,
		RenewInterval: 400 * time.Millisecond,
		SafetyMargin:  400 * time.Millisecond,
	}
	waitBucketReady(t, cl, cfg)
	a, nc := clusterCoordinator(t, cl, cfg, "a")
	b, _ := clusterCoordinator(t, cl, cfg, "b")

	var (
		mu         sync.Mutex
		active     int
		lastToken  uint64
		starts     []time.Time
		violations []string
	)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, c := range []coord.Coordinator{a, b} {
		wg.Go(func() {
			_ = coord.RunElected(ctx, c, "sweeper", func(fctx context.Context, term coord.Term) error {
				mu.Lock()
				active++
				if active > 1 {
					violations = append(violations, fmt.Sprintf("%s started token %d while another job ran", term.Holder(), term.Token()))
				}
				if term.Token() <= lastToken {
					violations = append(violations, fmt.Sprintf("token %d after %d", term.Token(), lastToken))
				}
				lastToken = term.Token()
				starts = append(starts, time.Now())
				mu.Unlock()
				<-fctx.Done()
				mu.Lock()
				active--
				mu.Unlock()
				return nil
			}, coord.ElectOptions{RetryInterval: 100 * time.Millisecond, CallTimeout: time.Second})
		})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			<-time.After(50 * time.Millisecond)
		}
	}
	waitFor("a job runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) > 0
	})

	js := jetStream(t, nc)
	info, err := js.Stream(t.Context(), "KV_"+cfg.Bucket)
	if err != nil {
		t.Fatalf("lease bucket stream: %v", err)
	}
	leader := info.CachedInfo().Cluster.Leader
	killed := -1
	for i := range cl.Nodes {
		if leader == fmt.Sprintf("%s-%d", cl.Name, i) {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("bucket leader %q is not one of the cluster's nodes", leader)
	}
	cl.Kill(t, killed)
	killedAt := time.Now()

	// Some holder runs the job after the failover, whether the old one kept
	// renewing through it or a candidate took over.
	waitFor("a job runs after the leader was killed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if active != 1 {
			return false
		}
		hr, ok := coord.Coordinator(b).(coord.HolderReader)
		if !ok {
			return false
		}
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		defer hcancel()
		_, held, err := hr.Holder(hctx, "sweeper")
		return err == nil && held && time.Since(killedAt) > cfg.Lease
	})
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("killed bucket leader %s; %d terms in all", leader, len(starts))
}

// nodeCoordinator builds a coordinator whose connection knows only node i
// of cl (no other server to fail over to), so that its requests reach the
// bucket through that node.
func nodeCoordinator(t *testing.T, cl *testsvc.NATSCluster, i int, cfg natscoord.Config, instance string) *natscoord.Coordinator {
	t.Helper()
	nc := connect(t, cl.Nodes[i].URL)
	c, err := natscoord.New(cfg, natscoord.Deps{JetStream: jetStream(t, nc), Instance: instance})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// TestWritesWaitOutBucketLeaderElection kills the node leading the R3 lease
// bucket and resigns at once, while the survivors have not yet elected a new
// leader: JetStream answers the delete with "no responders" (no server holds
// the stream), which means it reached no server, so the coordinator sends it
// again until a new leader takes it. The resignation succeeds, and the lease
// is free as soon as the bucket answers reads again.
func TestWritesWaitOutBucketLeaderElection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster")
	}
	cl := testsvc.StartNATSCluster(t, 3)
	// A lease far longer than the election, so that the term is still live
	// when it resigns.
	cfg := natscoord.Config{
		Manage:        true,
		Replicas:      3,
		Bucket:        testsvc.UniqueName(t, "leases"),
		Lease:         60 * time.Second,
		RenewInterval: 10 * time.Second,
		SafetyMargin:  10 * time.Second,
	}
	waitBucketReady(t, cl, cfg)
	info, err := jetStream(t, connect(t, cl.URL())).Stream(t.Context(), "KV_"+cfg.Bucket)
	if err != nil {
		t.Fatalf("lease bucket stream: %v", err)
	}
	leader := info.CachedInfo().Cluster.Leader
	killed := -1
	for i := range cl.Nodes {
		if leader == fmt.Sprintf("%s-%d", cl.Name, i) {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("bucket leader %q is not one of the cluster's nodes", leader)
	}
	via := (killed + 1) % len(cl.Nodes)
	a := nodeCoordinator(t, cl, via, cfg, "a")
	ta, err := a.TryAcquire(t.Context(), "sweeper")
	if err != nil {
		t.Fatalf("a.TryAcquire: %v", err)
	}

	cl.Kill(t, killed) // returns once the survivors dropped their routes to it
	killedAt := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := ta.Resign(ctx); err != nil {
		t.Fatalf("Resign during the bucket's leader election: %v", err)
	}
	t.Logf("killed bucket leader %s; the resignation landed %s later", leader, time.Since(killedAt).Round(time.Millisecond))

	b := nodeCoordinator(t, cl, via, cfg, "b")
	deadline := time.Now().Add(60 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(t.Context(), 2*time.Second)
		lease, held, err := b.Holder(rctx, "sweeper")
		rcancel()
		if err == nil {
			if held {
				t.Fatalf("after the resignation the lease is held by %s (token %d)", lease.Holder, lease.Token)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bucket never answered reads after the failover: %v", err)
		}
		<-time.After(100 * time.Millisecond)
	}
}
