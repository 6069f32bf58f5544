package writer

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/store"
)

type recordingStore struct {
	store.Inserter
	ev *order
}

func (r recordingStore) Insert(ctx context.Context, b store.Batch) error {
	err := r.Inserter.Insert(ctx, b)
	r.ev.add(fmt.Sprintf("insert %v", err))
	return err
}

type recordingJournal struct {
	mq.Journal
	ev *order
}

func (r recordingJournal) MarkInserted(ctx context.Context, p mq.BatchPlan, failed []mq.FailedRecord) error {
	err := r.Journal.MarkInserted(ctx, p, failed)
	r.ev.add(fmt.Sprintf("mark %v", err))
	return err
}

// TestFaultPointsAreBetweenInsertMarkAndAck: Deps.Fault is called at FaultInserted after the
// insert succeeded and before the plan is marked, and at FaultMarked after the mark and before
// any record is settled (acknowledged). The crash tests of tests/idempotency kill the real
// binary at these points and rely on exactly this placement.
func TestFaultPointsAreBetweenInsertMarkAndAck(t *testing.T) {
	e := newEnv(t)
	ev := &order{}
	runWriter(t, Deps{Consumer: e.q, Store: recordingStore{Inserter: e.s, ev: ev}, Targets: e,
		Journal: recordingJournal{Journal: e.q, ev: ev},
		Fault:   func(p FaultPoint) { ev.add("fault " + string(p)) },
		Hooks: Hooks{Settled: func(_, _ string, p mq.Position, _ bool) {
			ev.add("settled")
			e.settledHook().Settled("", "", p, false)
		}}})
	e.waitSettled(t, e.publish(t, `[1,"a"]`, `[2,"b"]`))
	want := []string{"insert <nil>", "fault inserted", "mark <nil>", "fault marked", "settled"}
	if got := ev.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if got := e.ids(t); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("inserted ids %v, want [1 2]", got)
	}
}
