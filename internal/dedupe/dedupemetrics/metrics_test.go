package dedupemetrics_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupemetrics"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestOutcomesAndErrors drives a real local store through each outcome and checks the counters.
func TestOutcomesAndErrors(t *testing.T) {
	clock := dedupetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	inner, err := localdedupe.New(localdedupe.Config{Dir: filepath.Join(t.TempDir(), "d")}, localdedupe.Deps{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := dedupemetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Wrap(inner)
	if _, ok := s.(dedupe.Sweeper); !ok {
		t.Fatalf("wrapped local store lost dedupe.Sweeper")
	}
	ctx := t.Context()
	k := dedupe.Key{Tenant: "acme", Table: "events", ID: "1"}

	res, err := s.Reserve(ctx, k, "a", time.Minute) // new
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Reserve(ctx, k, "a", time.Minute) // in_flight
	_, _ = s.Reserve(ctx, k, "b", time.Minute) // conflict
	if err := s.Commit(ctx, k, res.Claim.Token, dedupe.Response{Status: 202}, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Reserve(ctx, k, "a", time.Minute) // replayed
	clock.Advance(time.Hour)
	exp, _ := s.Reserve(ctx, k, "a", time.Minute) // expired
	// Marked, then lease and mark both lapse: the next claim is mark_lapsed.
	if errs := s.Mark(ctx, "frame-1", clock.Now().Add(2*time.Minute), []dedupe.Owned{{Key: k, Token: exp.Claim.Token}}); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("Mark = %v", errs)
	}
	clock.Advance(3 * time.Minute)
	_, _ = s.Reserve(ctx, k, "a", time.Minute) // mark_lapsed
	if err := s.Release(ctx, k, "stale"); !errors.Is(err, dedupe.ErrNotOwner) {
		t.Fatalf("stale Release = %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Get(ctx, k) // closed

	for outcome, want := range map[string]float64{
		dedupemetrics.OutcomeNew: 1, dedupemetrics.OutcomeInFlight: 1, dedupemetrics.OutcomeConflict: 1,
		dedupemetrics.OutcomeReplayed: 1, dedupemetrics.OutcomeExpired: 1, dedupemetrics.OutcomeMarkLapsed: 1,
	} {
		if got := value(t, m.OutcomeCounter(outcome)); got != want {
			t.Errorf("outcome %s = %v, want %v", outcome, got, want)
		}
	}
	if got := value(t, m.ErrorCounter("release", "not_owner")); got != 1 {
		t.Errorf("release not_owner errors = %v, want 1", got)
	}
	if got := value(t, m.ErrorCounter("get", "closed")); got != 1 {
		t.Errorf("get closed errors = %v, want 1", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "wavehouse_dedupe_call_duration_seconds" && len(f.GetMetric()) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no wavehouse_dedupe_call_duration_seconds series gathered")
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
