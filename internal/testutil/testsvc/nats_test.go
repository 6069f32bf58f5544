package testsvc

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestNATSStreamSurvivesStopAndKill(t *testing.T) {
	t.Parallel()
	ns := StartNATS(t)
	ctx := t.Context()
	stream := strings.ToUpper(UniqueName(t, "testsvc"))

	publish := func(n int) {
		t.Helper()
		nc, err := nats.Connect(ns.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := js.Publish(ctx, stream+".x", []byte("hello")); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func() uint64 {
		t.Helper()
		nc, err := nats.Connect(ns.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}

	publish(10)
	url := ns.URL
	ns.Stop(t)
	if _, err := nats.Connect(ns.URL); err == nil {
		t.Fatal("connected while the server was stopped")
	}
	ns.Start(t)
	if ns.URL != url {
		t.Fatalf("URL changed on restart: %s -> %s", url, ns.URL)
	}
	if got := count(); got != 10 {
		t.Fatalf("after Stop/Start the stream holds %d messages, want 10", got)
	}
	publish(5)
	ns.Kill(t)
	ns.Start(t)
	if got := count(); got != 15 {
		t.Fatalf("after Kill/Start the stream holds %d messages, want 15", got)
	}
}

func TestNATSServerSharedFromEnv(t *testing.T) {
	private := StartNATS(t)
	t.Setenv("WH_TEST_NATS_URL", private.URL)
	if got := NATSServer(t); got.URL != private.URL {
		t.Fatalf("NATSServer = %q, want the shared %q", got.URL, private.URL)
	}
	t.Setenv("WH_TEST_NATS_URL", "")
	if got := NATSServer(t); got.URL == private.URL || got.URL == "" {
		t.Fatalf("NATSServer without env = %q, want a new private server", got.URL)
	}
}
