package embeddedmq_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// storeMarker marks a frame's claims in a real local dedupe store, one Mark per frame, as the
// gateway's API does.
type storeMarker struct{ s *localdedupe.Store }

func (m storeMarker) MarkFrame(ctx context.Context, frame string, until time.Time, refs []any) []error {
	owned := make([]dedupe.Owned, len(refs))
	for i, r := range refs {
		owned[i] = r.(dedupe.Owned)
	}
	return m.s.Mark(ctx, frame, until, owned)
}

// BenchmarkClaimedPublish is the queue side of a keyed ingest request, from 64 concurrent
// callers under sync: always: Reserve a new key in a local dedupe store (Pebble, on the same
// disk), Publish the record with its claim (the frame's leader marks the frame's claims, fsynced,
// then publishes it, fsynced), Commit the response (fsynced). Metrics: requests/s and the mean
// records per frame.
//
//	go test -run '^$' -bench ClaimedPublish -benchtime 20000x ./internal/mq/embeddedmq/
func BenchmarkClaimedPublish(b *testing.B) {
	q := open(b, embeddedmq.Config{Dir: b.TempDir(), Sync: embeddedmq.SyncAlways, Partitions: 1, TenantMaxBytes: -1})
	s, err := localdedupe.New(localdedupe.Config{Dir: b.TempDir()}, localdedupe.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	m := storeMarker{s: s}
	payload := []byte(`{"ts":"2026-11-29T09:00:00Z","user_id":123456789,"event":"page_view","n":1}`)
	resp := dedupe.Response{Status: 202, Body: make([]byte, 200)}
	fp := rand.Text()
	var seq atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.SetParallelism(32) // 64 callers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			k := dedupe.Key{Tenant: "bench", Table: "events", ID: rand.Text() + strconv.FormatInt(seq.Add(1), 10)}
			res, err := s.Reserve(ctx, k, fp, time.Minute)
			if err != nil || res.Outcome != dedupe.OutcomeClaimed {
				b.Fatalf("Reserve = %v, %v", res.Outcome, err)
			}
			rec := mq.Record{Tenant: "bench", Table: "events", Payload: payload, IdempotencyKey: k.ID,
				Claim: &mq.Claim{Marker: m, Ref: dedupe.Owned{Key: k, Token: res.Claim.Token}}}
			if _, err := q.Publish(ctx, rec); err != nil {
				b.Fatalf("Publish: %v", err)
			}
			if err := s.Commit(ctx, k, res.Claim.Token, resp, time.Hour); err != nil {
				b.Fatalf("Commit: %v", err)
			}
		}
	})
	el := time.Since(start)
	b.StopTimer()
	st, err := q.Stats(context.Background(), "bench", "events")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "requests/s")
	b.ReportMetric(float64(b.N)/float64(st.Retained), "records/frame")
}
