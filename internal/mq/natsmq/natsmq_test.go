package natsmq_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestBootRefusesMissingTopologyNamingIt(t *testing.T) {
	srv := testsvc.NATSServer(t)
	prefix := testsvc.UniqueName(t, "boot")
	cfg := natsmq.Config{URLs: []string{srv.URL}, Prefix: prefix, Partitions: 2, Replicas: 1}
	q, err := natsmq.New(cfg, natsmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	err = q.Start(t.Context())
	if !errors.Is(err, mq.ErrTopology) {
		t.Fatalf("start without topology: %v, want mq.ErrTopology", err)
	}
	for _, want := range []string{"stream " + prefix + "_in_0 is missing", "stream " + prefix + "_in_1 is missing",
		"stream " + prefix + "_dlq is missing", "key-value bucket " + prefix + "_leases is missing", "manage_topology"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("boot error does not say %q:\n%v", want, err)
		}
	}
	_, err = q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte("r")})
	if !errors.Is(err, mq.ErrUnavailable) {
		t.Fatalf("publish on an unstarted queue: %v, want mq.ErrUnavailable", err)
	}

	// Once the operator created it (here: a managed start), a plain start
	// verifies and passes.
	managed := cfg
	managed.ManageTopology = true
	open(t, managed)
	t.Cleanup(func() { deleteTopology(srv.URL, cfg.Topology().Names()) })
	open(t, cfg)
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := natsmq.Config{Prefix: "bad.prefix", User: "u", CredsFile: "c", TLS: natsmq.TLS{CertFile: "x"}}.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"mq.nats.urls", "only one of", "password_file", "tls.cert_file", "prefix"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("validation error does not mention %q:\n%v", want, err)
		}
	}
}

func TestReconnectsAndFailsFastWhileDown(t *testing.T) {
	srv := testsvc.StartNATS(t)
	q := open(t, natsmq.Config{URLs: []string{srv.URL}, ManageTopology: true, Replicas: 1, Partitions: 1,
		PublishTimeout: 2 * time.Second, ReconnectWait: 50 * time.Millisecond})
	rec := mq.Record{Tenant: "t", Table: "x", Payload: []byte("r")}
	if _, err := q.Publish(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	start := time.Now()
	_, err := q.Publish(t.Context(), rec)
	if !errors.Is(err, mq.ErrUnavailable) {
		t.Fatalf("publish while the server is down: %v, want mq.ErrUnavailable", err)
	}
	if el := time.Since(start); el > 2500*time.Millisecond {
		t.Fatalf("publish while down took %v, want a fast failure", el)
	}
	srv.Start(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err = q.Publish(t.Context(), rec)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful publish within 20s of the restart: %v", err)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	st, err := q.Stats(t.Context(), "t", "x")
	if err != nil || st.Retained != 2 {
		t.Fatalf("after reconnect: %+v, %v; want both acknowledged records retained", st, err)
	}
}

func TestUserPasswordFileAuth(t *testing.T) {
	srv := testsvc.StartNATS(t, testsvc.WithNATSArgs("--user", "wh", "--pass", "s3cret"))
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := natsmq.Config{URLs: []string{srv.URL}, ManageTopology: true, Replicas: 1, Partitions: 1, User: "wh", PasswordFile: pw}
	q := open(t, cfg)
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte("r")}); err != nil {
		t.Fatalf("publish with password auth: %v", err)
	}
	if err := os.WriteFile(pw, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad, err := natsmq.New(cfg, natsmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Start(t.Context()); !errors.Is(err, mq.ErrUnavailable) || !strings.Contains(err.Error(), "uthoriz") {
		t.Fatalf("start with a wrong password: %v, want mq.ErrUnavailable naming the authorization failure", err)
	}
	_ = bad.Close(t.Context())
}
