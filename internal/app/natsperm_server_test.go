package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// errStop ends a Replay once it delivered what the test waits for.
var errStop = errors.New("stop")

// TestNATSUsersRunTheRolesOnAnOperatorTopology is the Kubernetes case (mq.nats.manage_topology
// false, the split suite runs the managed one): an operator user creates the topology, then each
// role runs the queue (and the sweeper its lease) as its generated user on a nats-server
// enforcing the rendered block. The api publishes and replays, the ingest worker pulls and
// dead-letters, the api lists the dead letters, the sweeper expires them, trims (by size and by
// age) and takes the lease, every queue's metrics are gathered, and no
// role's log reports a permissions violation; the api trimming is refused and logged.
func TestNATSUsersRunTheRolesOnAnOperatorTopology(t *testing.T) {
	cfg := natsPermConfig(false)
	cfg.MQ.Prefix = testsvc.UniqueName(t, "whp")
	cfg.MQ.NATS.Replicas = 1
	cfg.Coord.NATS.Bucket = cfg.MQ.Prefix + "_leases"
	users := NATSUsers(cfg, "wavehouse-")
	all := jsmq.Rules{Allow: []string{">"}}
	operator := NATSUser{Role: "operator", User: "operator", PasswordVar: "WH_TEST_OPERATOR_PASSWORD", Permissions: jsmq.Permissions{Publish: all, Subscribe: all}}
	dir := t.TempDir()
	conf := filepath.Join(dir, "users.conf")
	if err := os.WriteFile(conf, RenderNATSAuthorization(append(users, operator)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{operator.PasswordVar + "=pw-operator"}
	for _, u := range users {
		env = append(env, u.PasswordVar+"=pw-"+string(u.Role))
		if err := os.WriteFile(filepath.Join(dir, string(u.Role)), []byte("pw-"+string(u.Role)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := testsvc.StartNATS(t, testsvc.WithNATSConfig(conf), testsvc.WithNATSEnv(env...))
	qc := NATSQueueConfig(cfg.MQ)
	qc.URLs, qc.PublishTimeout = []string{srv.URL}, 2*time.Second

	nc, err := nats.Connect(srv.URL, nats.UserInfo("operator", "pw-operator"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := qc.Topology().Ensure(t.Context(), js); err != nil {
		t.Fatalf("operator creating the topology: %v", err)
	}

	logs := map[string]*logbuf.Buffer{}
	open := func(role string) *jsmq.Queue {
		c := qc
		c.User, c.PasswordFile = "wavehouse-"+role, filepath.Join(dir, role)
		logs[role] = &logbuf.Buffer{}
		reg := prometheus.NewRegistry()
		q, err := natsmq.New(c, natsmq.Deps{Registerer: reg, Log: slog.New(slog.NewTextHandler(logs[role], nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(t.Context()); err != nil {
			t.Fatalf("%s: start: %v", role, err)
		}
		t.Cleanup(func() { _ = q.Close(context.Background()) })
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("%s: metrics: %v", role, err)
		}
		jq, err := q.Queue()
		if err != nil {
			t.Fatal(err)
		}
		return jq
	}
	api, ingest, sweeper := open("api"), open("ingest"), open("sweeper")

	ctx := t.Context()
	pos, err := api.Publish(ctx, mq.Record{Tenant: "acme", Table: "events", Payload: []byte(`{"id":1}`)})
	if err != nil {
		t.Fatalf("api publish: %v", err)
	}
	err = api.Replay(ctx, "acme", "events", mq.Cursor{}, func(e mq.Event) error {
		if e.Record != nil {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("api replay: %v, want the published record", err)
	}
	p := api.Names().Partition("acme", "events")
	sub, err := ingest.Subscribe(ctx, p)
	if err != nil {
		t.Fatalf("ingest subscribe: %v", err)
	}
	ds, err := sub.Fetch(ctx, 10, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("ingest fetch: %d deliveries, %v; want the published frame (%+v)", len(ds), err, pos)
	}
	// Dead-lettering publishes the record to the DLQ and acknowledges the frame.
	if err := ds[0].(mq.DeadLetterer).DeadLetter(ctx, mq.Reason{Code: "test", Message: "dead-lettered by the test"}); err != nil {
		t.Fatalf("ingest dead-letter: %v", err)
	}
	if entries, err := api.DLQ().List(ctx, "acme", "events", 0, 10); err != nil || len(entries) != 1 {
		t.Fatalf("api listing the dead letters: %d entries, %v; want 1", len(entries), err)
	}
	if n, err := sweeper.DLQ().(mq.DeadLetterExpirer).Expire(ctx, time.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("sweeper expiring the dead letters: %d, %v; want 1", n, err)
	}
	// The age trim lists the consumers for their ack floors; the frame is younger, so it stays.
	if n, err := sweeper.Trim(ctx, p, 0, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("sweeper trim: %d removed, %v; want none (the frame is younger)", n, err)
	}
	// A share so small the stream is over it: the trim to fit reads the consumers' ack floors,
	// the frames' times and, as the frame is younger than keepAfter, its headers with an ordered
	// consumer (it carries no message id, so it goes), then purges.
	if n, err := sweeper.TrimToFit(ctx, p, 1e-9, mq.FitKeep{Keyed: time.Now().Add(-time.Hour)}); err != nil || n != 1 {
		t.Fatalf("sweeper trim to fit: %d removed, %v; want the dead-lettered frame", n, err)
	}
	lc, err := natscoord.New(natscoord.Config{Bucket: cfg.Coord.NATS.Bucket, Lease: 2 * time.Second},
		natscoord.Deps{JetStream: sweeper.JetStream(), Instance: "sweeper-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.Init(ctx); err != nil {
		t.Fatalf("sweeper lease bucket: %v", err)
	}
	t.Cleanup(func() { _ = lc.Close(context.Background()) })
	if _, err := lc.TryAcquire(ctx, "sweeper"); err != nil {
		t.Fatalf("sweeper lease: %v", err)
	}
	for role, l := range logs {
		if strings.Contains(l.String(), "Permissions Violation") {
			t.Errorf("%s: the server refused a call of its role:\n%s", role, l.String())
		}
	}

	if _, err := api.Trim(ctx, p, 0, time.Now()); err == nil {
		t.Error("api trim: succeeded, want it refused")
	}
	subject := "$JS.API.CONSUMER.LIST." + api.Names().Stream(p)
	poll.Until(t, 10*time.Second, "the api log to report a permissions violation for "+subject, func() bool {
		l := logs["api"].String()
		return strings.Contains(l, "Permissions Violation") && strings.Contains(l, subject)
	})
}
