package natscoord_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestConfigValidate(t *testing.T) {
	if err := (natscoord.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "coord.nats.bucket") {
		t.Fatalf("zero Config: %v, want an error naming coord.nats.bucket (no bucket default: the app passes <mq.prefix>_leases)", err)
	}
	if err := (natscoord.Config{Bucket: "leases"}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tc := testConfig
	tc.Bucket = "leases"
	if err := tc.Validate(); err != nil {
		t.Fatalf("test Config: %v", err)
	}
	bad := natscoord.Config{Bucket: "a.b", Replicas: 7, Lease: -1, RenewInterval: -1, SafetyMargin: -1}
	err := bad.Validate()
	for _, key := range []string{"coord.nats.bucket", "mq.nats.replicas", "coord.lease", "RenewInterval", "SafetyMargin"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate(%+v) = %v, want a problem naming %s", bad, err, key)
		}
	}
	for _, cfg := range []natscoord.Config{
		{Bucket: "leases", Lease: time.Second, SafetyMargin: time.Second},
		{Bucket: "leases", Lease: time.Second, SafetyMargin: 200 * time.Millisecond, RenewInterval: 800 * time.Millisecond},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error: a holder would step down between renewals", cfg)
		}
	}
	if _, err := natscoord.New(natscoord.Config{}, natscoord.Deps{}); err == nil {
		t.Error("New without a JetStream handle succeeded")
	}
}

func TestMissingBucketWithoutManage(t *testing.T) {
	srv := testsvc.NATSServer(t)
	cfg := testConfig
	cfg.Manage = false
	cfg.Bucket = testsvc.UniqueName(t, "absent")
	c, _ := newCoordinator(t, srv.URL, cfg, "a")
	err := c.Init(t.Context())
	if !errors.Is(err, coord.ErrUnavailable) || !strings.Contains(err.Error(), "manage") {
		t.Fatalf("Init with a missing bucket = %v, want coord.ErrUnavailable telling to set manage", err)
	}
	if _, err := c.TryAcquire(t.Context(), "sweeper"); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("TryAcquire with a missing bucket = %v, want coord.ErrUnavailable", err)
	}

	// Once an operator has created it, the same coordinator uses it.
	mgr := testConfig
	mgr.Bucket = cfg.Bucket
	dropBucket(t, srv.URL, cfg.Bucket)
	m, _ := newCoordinator(t, srv.URL, mgr, "operator")
	if err := m.Init(t.Context()); err != nil {
		t.Fatalf("Init with manage: %v", err)
	}
	if _, err := c.TryAcquire(t.Context(), "sweeper"); err != nil {
		t.Fatalf("TryAcquire once the bucket exists: %v", err)
	}
}

// TestServerOutage cuts the server under a holder and a candidate: the
// holder steps down on its own, calls report coord.ErrUnavailable, and once
// the server is back the candidate takes over only after a full lease.
func TestServerOutage(t *testing.T) {
	srv := testsvc.StartNATS(t)
	cfg := testConfig
	cfg.Bucket = testsvc.UniqueName(t, "leases")
	reconnecting := func(t *testing.T) *natscoord.Coordinator {
		nc, err := nats.Connect(srv.URL, nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(nc.Close)
		c, err := natscoord.New(cfg, natscoord.Deps{JetStream: jetStream(t, nc), Instance: t.Name()})
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
	a, b := reconnecting(t), reconnecting(t)
	ta, err := a.TryAcquire(t.Context(), "sweeper")
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}

	srv.Kill(t)
	killed := time.Now()
	select {
	case <-ta.Done():
	case <-time.After(cfg.Lease + 5*time.Second):
		t.Fatal("holder did not step down while the server was down")
	}
	if got := time.Since(killed); got > cfg.Lease-cfg.SafetyMargin+time.Second {
		t.Errorf("holder stepped down %s after the outage began, want within lease - safety margin (%s) plus slack", got, cfg.Lease-cfg.SafetyMargin)
	}
	if !errors.Is(ta.Err(), coord.ErrLeaseLost) {
		t.Fatalf("holder's Err = %v, want coord.ErrLeaseLost", ta.Err())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	called := time.Now()
	if _, err := b.TryAcquire(ctx, "sweeper"); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("TryAcquire while the server is down = %v, want coord.ErrUnavailable", err)
	}
	if got := time.Since(called); got > 2*time.Second {
		t.Errorf("TryAcquire with a 500ms ctx took %s while the server was down, want it bounded by ctx", got)
	}

	srv.Start(t)
	restarted := time.Now()
	var tb coord.Term
	deadline := restarted.Add(10*cfg.Lease + 10*time.Second)
	for tb == nil {
		if time.Now().After(deadline) {
			t.Fatal("candidate never took the lease over after the restart")
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		tb, err = b.TryAcquire(ctx, "sweeper")
		cancel()
		if err != nil && !errors.Is(err, coord.ErrHeld) && !errors.Is(err, coord.ErrUnavailable) {
			t.Fatalf("TryAcquire after restart: %v", err)
		}
		if tb == nil {
			<-time.After(cfg.Lease / 10)
		}
	}
	// The record survived the restart (file store), so the candidate had to
	// watch it unchanged for a full lease first.
	if got := time.Since(restarted); got < cfg.Lease {
		t.Fatalf("lease taken %s after the restart, want >= lease %s", got, cfg.Lease)
	}
	if tb.Token() <= ta.Token() {
		t.Fatalf("token after takeover %d, want > %d", tb.Token(), ta.Token())
	}
}
