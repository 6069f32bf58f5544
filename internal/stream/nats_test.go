package stream_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestTwoProcessesOverExternalNATS: two api processes (two services over
// two connections to one NATS server) both deliver every row, whichever
// process accepted it, in the same order.
func TestTwoProcessesOverExternalNATS(t *testing.T) {
	url := testsvc.NATSServer(t).URL
	prefix := testsvc.UniqueName(t, "st")
	open := func() *natsmq.Queue {
		q, err := natsmq.New(natsmq.Config{URLs: []string{url}, ManageTopology: true, Replicas: 1, Prefix: prefix, Partitions: 1,
			PublishTimeout: 5 * time.Second}, natsmq.Deps{})
		if err != nil {
			t.Fatalf("natsmq: %v", err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatalf("natsmq start: %v", err)
		}
		t.Cleanup(func() { _ = q.Close(context.Background()) })
		return q
	}
	q1, q2 := open(), open()
	s1, s2 := newServer(t, q1, stream.Config{}), newServer(t, q2, stream.Config{})
	c1 := dial(t, streamURL(s1, "events", ""), nil)
	c2 := dial(t, streamURL(s2, "events", ""), nil)
	warm(t, q1, "events", c1, c2)

	var want []string
	for i := range 30 {
		q := testQueue(q1)
		if i%2 == 1 {
			q = q2
		}
		want = append(want, eid(t, q, "events", publish(t, q, "events", []any{i, "n"})))
	}
	for name, c := range map[string]*sseConn{"process 1": c1, "process 2": c2} {
		var got []string
		for len(got) < len(want) {
			got = append(got, c.nextRows(t).ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s delivered %v, want %v", name, got, want)
		}
	}
}
