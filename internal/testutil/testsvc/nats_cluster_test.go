package testsvc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

func TestNATSClusterR3SurvivesOneNodeKilled(t *testing.T) {
	t.Parallel()
	c := StartNATSCluster(t, 3)
	if len(c.URLs()) != 3 {
		t.Fatalf("URLs() = %v, want 3", c.URLs())
	}
	ctx := t.Context()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := strings.ToUpper(UniqueName(t, "r3"))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream}, Replicas: 3}); err != nil {
		t.Fatalf("create R3 stream: %v", err)
	}
	// CreateStream can return before the new R3 stream has elected its leader; until then a
	// publish gets no response, so the first one is retried within a deadline too.
	var berr error
	if !poll.Within(t, 60*time.Second, func() bool {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		_, berr = js.Publish(actx, stream, []byte("before"), jetstream.WithMsgID("before"))
		return berr == nil
	}) {
		t.Fatalf("first publish to the new R3 stream: %v", berr)
	}

	// Kill a node the client is not connected to, so the test exercises the
	// cluster rather than client failover.
	victim := 0
	for i, u := range c.URLs() {
		if u != nc.ConnectedUrl() {
			victim = i
			break
		}
	}
	c.Kill(t, victim)
	// If the victim led the stream, a new leader is elected first; until
	// then publishes get no responder, so retry within a deadline.
	var perr error
	if !poll.Within(t, 60*time.Second, func() bool {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		_, perr = js.Publish(actx, stream, []byte("during"), jetstream.WithMsgID("during"))
		return perr == nil
	}) {
		t.Fatalf("publish with one of three nodes down: %v", perr)
	}
	c.Start(t, victim)

	// The restarted node serves the stream with both messages.
	nc2, err := nats.Connect(c.Nodes[victim].URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js2.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.Config.Replicas != 3 {
		t.Fatalf("stream after restart: msgs=%d replicas=%d, want 2 and 3", info.State.Msgs, info.Config.Replicas)
	}
}
