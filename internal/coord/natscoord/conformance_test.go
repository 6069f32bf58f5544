package natscoord_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/coordtest"
	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Short leases keep the suite fast; the timing argument does not depend on
// the scale. A renewal must still fit in lease - margin on a loaded 2-core CI
// machine under -race, where 600 ms proved too little.
var testConfig = natscoord.Config{
	Manage:        true,
	Lease:         1600 * time.Millisecond,
	RenewInterval: 300 * time.Millisecond,
	SafetyMargin:  300 * time.Millisecond,
}

// connect opens a NATS connection closed at cleanup.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// jetStream returns a JetStream handle over nc.
func jetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return js
}

// newCoordinator builds a coordinator on its own connection, closed at
// cleanup; the connection is returned so that a test can cut it.
func newCoordinator(t *testing.T, url string, cfg natscoord.Config, instance string) (*natscoord.Coordinator, *nats.Conn) {
	t.Helper()
	return newCoordinatorTB(t, url, cfg, instance)
}

// newCoordinatorTB is newCoordinator for tests and benchmarks.
func newCoordinatorTB(t testing.TB, url string, cfg natscoord.Config, instance string) (*natscoord.Coordinator, *nats.Conn) {
	t.Helper()
	nc := connect(t, url)
	c, err := natscoord.New(cfg, natscoord.Deps{JetStream: jetStream(t, nc), Instance: instance})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx) // fails by design after the test cut the connection
	})
	return c, nc
}

// dropBucket deletes the bucket at cleanup so that a shared server does not
// accumulate test buckets.
func dropBucket(t testing.TB, url, bucket string) {
	t.Helper()
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteKeyValue(ctx, bucket)
	})
}

func TestConformance(t *testing.T) {
	srv := testsvc.NATSServer(t)
	coordtest.Run(t, func(t *testing.T) *coordtest.Harness {
		cfg := testConfig
		cfg.Bucket = testsvc.UniqueName(t, "leases")
		dropBucket(t, srv.URL, cfg.Bucket)
		conns := map[coord.Coordinator]*nats.Conn{}
		return &coordtest.Harness{
			New: func(t *testing.T, instance string) coord.Coordinator {
				c, nc := newCoordinator(t, srv.URL, cfg, instance)
				conns[c] = nc
				return c
			},
			// A coordinator whose connection is gone can neither renew nor
			// resign, like a crashed or partitioned process.
			Kill:  func(t *testing.T, c coord.Coordinator) { conns[c].Close() },
			Lease: cfg.Lease,
			Clock: coord.SystemClock(),
		}
	}, coordtest.Caps{})
}
