// Package mqtest is the conformance suite of the queue layer. Every backend
// runs it from its conformance_test.go against a real server:
//
//	mqtest.Run(t, newHarness, mqtest.Caps{...})
package mqtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Options are the settings a case needs from a fresh queue. Zero values mean
// the suite's fast defaults (below).
type Options struct {
	// Partitions of the queue. Default 2.
	Partitions int
	// AckWait before an unacknowledged delivery is redelivered. Default 5s.
	AckWait time.Duration
	// DuplicateWindow of idempotency keys. Default 1m.
	DuplicateWindow time.Duration
	// MaxBytes per partition stream; 0 means the backend default.
	MaxBytes int64
	// TenantMaxBytes per tenant (backends with Caps.TenantBudget); 0 means
	// unlimited.
	TenantMaxBytes int64
	// NeedBreak asks for a harness whose Break hook works (for example a
	// private server process instead of a shared one).
	NeedBreak bool
}

// Harness is one fresh, started queue (isolated from every other harness)
// plus hooks that reach behind it.
type Harness struct {
	// Queue is started and empty. The suite closes it.
	Queue mq.Queue
	// DeleteConsumer deletes partition p's durable ingest consumer.
	DeleteConsumer func(t testing.TB, p int)
	// Break makes the server unreachable without closing the queue (nil
	// when the backend cannot; the case is skipped).
	Break func(t testing.TB)
	// PublishRaw stores data as it is on partition p's ingest subject
	// "<prefix>.in.<p>.<tail>" with the given headers, bypassing the
	// queue's encoding, and returns the stream sequence (nil when the
	// backend cannot; the cases that need it are skipped).
	PublishRaw func(t testing.TB, p int, tail string, data []byte, headers map[string]string) uint64
	// Gatherer, when not nil, gathers the queue's metrics.
	Gatherer prometheus.Gatherer
}

// NewHarness returns a fresh harness; it registers its own cleanup.
type NewHarness func(t *testing.T, o Options) *Harness

// Caps names what a backend supports where backends legitimately differ.
type Caps struct {
	// TenantBudget: a per-tenant byte budget yields mq.ErrQueueFull.
	TenantBudget bool
}

// Run runs every case.
func Run(t *testing.T, newHarness NewHarness, caps Caps) {
	cases := []struct {
		name string
		f    func(*testing.T, NewHarness, Caps)
	}{
		{"RoundTripEscapedNames", testRoundTrip},
		{"LargeRecordsRoundTrip", testLargeRecordsRoundTrip},
		{"OrderWithinTable", testOrder},
		{"GroupCommitCoalesces", testGroupCommit},
		{"NakRedeliversAfterDelay", testNak},
		{"AckWaitRedelivers", testAckWait},
		{"TermDoesNotRedeliver", testTerm},
		{"DeadLetterKeepsReasonAndSettlesOnce", testDeadLetter},
		{"DLQListCountReplayPurge", testDLQOps},
		{"ReplayAfterPosition", testReplay},
		{"ReplayResetAfterTrim", testReplayReset},
		{"ReplayEpochResets", testReplayEpoch},
		{"FailedPullIsError", testFailedPull},
		{"FetchHonoursContext", testFetchHonoursContext},
		{"TrimNeverCrossesAckFloor", testTrim},
		{"TrimToFitStopsAtAckFloorAndKeepAfter", testTrimToFit},
		{"QueueFull", testQueueFull},
		{"IdempotencyKeyDropsRepeat", testIdempotency},
		{"ClaimsShareFrames", testClaimsShareFrames},
		{"ClaimPriorResolved", testClaimPriorResolved},
		{"FencedFrameNotStored", testFencedFrameNotStored},
		{"DeliveryEndedOnce", testDeliveryEnded},
		{"Stats", testStats},
		{"Closed", testClosed},
		{"RetentionRedeliveryDLQReplay", testRetentionRedeliveryDLQReplay},
		{"JournalPlanLifecycle", testJournalPlanLifecycle},
		{"JournalLatestPlanWins", testJournalLatestPlanWins},
		{"JournalGetFrame", testJournalGetFrame},
		{"UndecodableIsDeadLettered", testUndecodableDeadLettered},
		{"ReplaySkipsUndecodableWithGap", testReplayUndecodableGap},
		{"SchemasKeepLatest", testSchemasKeepLatest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.f(t, newHarness, caps) })
	}
}

// ctxT returns a context bounded for one case.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func publish(t *testing.T, q mq.Queue, rec mq.Record) mq.PublishResult {
	t.Helper()
	res, err := q.Publish(ctxT(t), rec)
	if err != nil {
		t.Fatalf("publish %s/%s: %v", rec.Tenant, rec.Table, err)
	}
	return res
}

func subscribe(t *testing.T, q mq.Queue, tenant, table string) mq.Subscription {
	t.Helper()
	p := mq.PartitionOf(tenant, table, q.Partitions())
	s, err := q.Subscribe(ctxT(t), p)
	if err != nil {
		t.Fatalf("subscribe partition %d: %v", p, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fetchN fetches until n deliveries arrived or the deadline passed.
func fetchN(t *testing.T, s mq.Subscription, n int, within time.Duration) []mq.Delivery {
	t.Helper()
	deadline := time.Now().Add(within)
	var out []mq.Delivery
	for len(out) < n && time.Now().Before(deadline) {
		ds, err := s.Fetch(ctxT(t), n-len(out), min(time.Until(deadline), time.Second)+time.Millisecond)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		out = append(out, ds...)
	}
	if len(out) < n {
		t.Fatalf("fetched %d deliveries within %v, want %d", len(out), within, n)
	}
	return out
}

// records returns every record of the deliveries, in order.
func records(ds []mq.Delivery) []mq.Record {
	var out []mq.Record
	for _, d := range ds {
		out = append(out, d.Records()...)
	}
	return out
}

// fetchRecords fetches (and acks) deliveries until n records arrived.
func fetchRecords(t *testing.T, s mq.Subscription, n int, within time.Duration) []mq.Record {
	t.Helper()
	deadline := time.Now().Add(within)
	var out []mq.Record
	for len(out) < n && time.Now().Before(deadline) {
		ds, err := s.Fetch(ctxT(t), 100, min(time.Until(deadline), time.Second)+time.Millisecond)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		for _, d := range ds {
			out = append(out, d.Records()...)
			if err := d.Ack(ctxT(t)); err != nil {
				t.Fatalf("ack: %v", err)
			}
		}
	}
	if len(out) < n {
		t.Fatalf("fetched %d records within %v, want %d", len(out), within, n)
	}
	return out
}

// expectNone asserts that nothing is delivered within d.
func expectNone(t *testing.T, s mq.Subscription, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ds, err := s.Fetch(ctxT(t), 10, time.Until(deadline)+time.Millisecond)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if len(ds) > 0 {
			t.Fatalf("got %d unexpected deliveries (first frame %d, attempts %d)", len(ds), ds[0].Meta().Seq, ds[0].Meta().Attempts)
		}
	}
}

func rec(tenant, table string, i int) mq.Record {
	return mq.Record{Tenant: tenant, Table: table, Payload: fmt.Appendf(nil, `{"i":%d}`, i)}
}

func wantIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
