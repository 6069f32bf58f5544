package mqtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// marker is an mq.FrameMarker that records which refs each frame was marked with, and the
// order frames were marked in; before returning it runs hook (when set) with the frame id.
type marker struct {
	mu     sync.Mutex
	frames map[string][]any
	order  []string
	hook   func(frame string, refs []any)
}

func (m *marker) MarkFrame(_ context.Context, frame string, _ time.Time, refs []any) []error {
	m.mu.Lock()
	if m.frames == nil {
		m.frames = map[string][]any{}
	}
	if _, ok := m.frames[frame]; !ok {
		m.order = append(m.order, frame)
	}
	m.frames[frame] = append(m.frames[frame], refs...)
	hook := m.hook
	m.mu.Unlock()
	if hook != nil {
		hook(frame, refs)
	}
	return make([]error, len(refs))
}

// frameOf returns the frame ref was marked with.
func (m *marker) frameOf(t *testing.T, ref any) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for f, refs := range m.frames {
		if slices.Contains(refs, ref) {
			return f
		}
	}
	t.Fatalf("%v was never marked", ref)
	return ""
}

func claimed(table, key string, m *marker, prior string) mq.Record {
	r := rec("t", table, 0)
	r.Payload = []byte(key)
	r.IdempotencyKey = key
	r.Claim = &mq.Claim{Marker: m, Ref: key, Prior: prior}
	return r
}

// testClaimsShareFrames: concurrent claimed records are group-committed (fewer frames than
// records), every claim is marked exactly once with the frame that stores it, frames are stored
// in the order they were marked, and consumers see every record once.
func testClaimsShareFrames(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	m := &marker{}
	const n = 32
	pos := make([]mq.Position, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := q.Publish(ctxT(t), claimed("shared", fmt.Sprint("k", i), m, ""))
			if err != nil || res.Duplicate {
				t.Errorf("publish %d: %+v, %v", i, res, err)
			}
			pos[i] = res.Position
		})
	}
	wg.Wait()
	seqOf := map[string]uint64{}
	for i := range n {
		f := m.frameOf(t, fmt.Sprint("k", i))
		if s, ok := seqOf[f]; ok && s != pos[i].Seq {
			t.Fatalf("frame %s marked for records stored at sequences %d and %d", f, s, pos[i].Seq)
		}
		seqOf[f] = pos[i].Seq
	}
	marked := 0
	for _, refs := range m.frames {
		marked += len(refs)
	}
	if marked != n {
		t.Fatalf("%d marks for %d claims", marked, n)
	}
	for i := 1; i < len(m.order); i++ {
		if prev, cur := seqOf[m.order[i-1]], seqOf[m.order[i]]; cur <= prev {
			t.Fatalf("frame %d in mark order stored at sequence %d, after its predecessor's %d", i, cur, prev)
		}
	}
	if len(m.frames) == n {
		t.Logf("no two of %d concurrent claimed records shared a frame (a slow machine can do that)", n)
	}
	got := fetchRecords(t, subscribe(t, q, "t", "shared"), n, 10*time.Second)
	if len(got) != n {
		t.Fatalf("delivered %d records, want %d", len(got), n)
	}
}

// testClaimPriorResolved: a record whose earlier attempt's frame holds it is not stored again
// (the first position, Duplicate); one whose earlier frame does not hold it, or was never
// stored, is published anew, and the fence that settled it is never delivered.
func testClaimPriorResolved(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	m := &marker{}
	first := publish(t, q, claimed("prior", "a", m, ""))
	f := m.frameOf(t, "a")
	again := publish(t, q, claimed("prior", "a", m, f))
	if !again.Duplicate || again.Position != first.Position {
		t.Fatalf("retry of a stored request: %+v, want a duplicate of %v", again, first.Position)
	}
	if res := publish(t, q, claimed("prior", "b", m, f)); res.Duplicate {
		t.Fatalf("a request absent from its prior frame was reported a duplicate: %+v", res)
	}
	if res := publish(t, q, claimed("prior", "c", m, "frame-never-stored")); res.Duplicate {
		t.Fatalf("a request whose prior frame was never stored was reported a duplicate: %+v", res)
	}
	// The fence is stored now: resolving the same id again finds the fence, not a frame.
	if res := publish(t, q, claimed("prior", "d", m, "frame-never-stored")); res.Duplicate {
		t.Fatalf("a fenced frame id was reported as holding the request: %+v", res)
	}
	s := subscribe(t, q, "t", "prior")
	got := fetchRecords(t, s, 4, 10*time.Second)
	var keys []string
	for _, r := range got {
		keys = append(keys, r.IdempotencyKey)
	}
	if !slices.Equal(keys, []string{"a", "b", "c", "d"}) {
		t.Fatalf("delivered %v, want [a b c d]", keys)
	}
	expectNone(t, s, 500*time.Millisecond)
}

// testFencedFrameNotStored: when a retry fences a frame's id while the frame's leader is still
// between marking and publishing (a slow, not dead, process), the frame is not stored and its
// requests fail with mq.ErrUnavailable; the retry's rows are stored once.
func testFencedFrameNotStored(t *testing.T, nh NewHarness, _ Caps) {
	q := nh(t, Options{Partitions: 1}).Queue
	m := &marker{}
	rescued := make(chan error, 1)
	var once sync.Once
	m.hook = func(frame string, refs []any) {
		if !slices.Contains(refs, any("victim")) {
			return
		}
		once.Do(func() {
			before, err := q.Stats(ctxT(t), "t", "fenced")
			if err != nil {
				t.Errorf("stats: %v", err)
				return
			}
			go func() {
				_, err := q.Publish(ctxT(t), claimed("fenced", "victim", &marker{}, frame))
				rescued <- err
			}()
			poll.Until(t, 10*time.Second, "the retry's fence stored", func() bool {
				st, err := q.Stats(ctxT(t), "t", "fenced")
				return err == nil && st.Retained > before.Retained
			})
		})
	}
	_, err := q.Publish(ctxT(t), claimed("fenced", "victim", m, ""))
	wantIs(t, err, mq.ErrUnavailable, "publish of a fenced frame")
	if err := <-rescued; err != nil {
		t.Fatalf("the retry's publish: %v", err)
	}
	s := subscribe(t, q, "t", "fenced")
	if got := fetchRecords(t, s, 1, 10*time.Second); len(got) != 1 || got[0].IdempotencyKey != "victim" {
		t.Fatalf("delivered %+v, want the retry's record", got)
	}
	expectNone(t, s, 500*time.Millisecond)
}
