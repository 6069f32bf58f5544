package jsmq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// testConn connects to the test NATS server, closed at cleanup.
func testConn(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(testsvc.NATSServer(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// testTopology is a one-partition layout with a name unique to the test.
func testTopology(t *testing.T, name string) Topology {
	return Topology{Prefix: testsvc.UniqueName(t, name), Partitions: 1, Replicas: 1, MaxBytes: 64 << 20,
		DuplicateWindow: time.Minute, AckWait: 5 * time.Second, MaxAckPending: 100}
}

// testQueue opens a Queue on opts.Topology, creates its streams and deletes them at cleanup.
func testQueue(t *testing.T, nc *nats.Conn, opts Options) *Queue {
	t.Helper()
	q, err := New(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := opts.Topology.Ensure(t.Context(), q.JetStream()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n := opts.Topology.Names()
		for _, s := range []string{n.Stream(0), n.DLQStream()} {
			_ = q.JetStream().DeleteStream(context.Background(), s)
		}
		for _, b := range []string{n.LeaseBucket(), n.JournalBucket(), n.SchemaBucket()} {
			_ = q.JetStream().DeleteKeyValue(context.Background(), b)
		}
		_ = q.Close(context.Background())
	})
	return q
}
