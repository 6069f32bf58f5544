package natsmq_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestBootWaitsForJetStream: a process that connects while JetStream cannot answer yet (a
// cluster still electing its meta leader answers "no responders") keeps trying and boots once
// JetStream answers, instead of exiting with "layout record: nats: no responders". The server
// here is a real nats-server whose JetStream is enabled a while after the queue connected.
func TestBootWaitsForJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	var logs logbuf.Buffer
	q, err := natsmq.New(natsmq.Config{URLs: []string{srv.ClientURL()}, ManageTopology: true, Replicas: 1, Partitions: 1,
		PublishTimeout: time.Second, ReconnectWait: 100 * time.Millisecond},
		natsmq.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	started := make(chan error, 1)
	go func() { started <- q.Start(t.Context()) }()

	// The queue is connected and retrying before JetStream exists.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "JetStream is not answering yet") {
		select {
		case err := <-started:
			t.Fatalf("Start returned before JetStream was enabled: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no retry logged within 20s")
		}
	}
	if err := srv.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start after JetStream was enabled: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return within 30s of JetStream being enabled")
	}
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte("r")}); err != nil {
		t.Fatalf("publish after the boot: %v", err)
	}
}
