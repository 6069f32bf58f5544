package embeddedmq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// frameRecorder is an mq.FrameMarker that remembers the frame each ref was marked with.
type frameRecorder struct {
	mu     sync.Mutex
	frames map[any]string
}

func (m *frameRecorder) MarkFrame(_ context.Context, frame string, _ time.Time, refs []any) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frames == nil {
		m.frames = map[any]string{}
	}
	for _, r := range refs {
		m.frames[r] = frame
	}
	return make([]error, len(refs))
}

func (m *frameRecorder) frameOf(ref any) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frames[ref]
}

func keyedRecord(m mq.FrameMarker, key, prior string) mq.Record {
	return mq.Record{Tenant: "acme", Table: "keyed", Payload: []byte(key), IdempotencyKey: key,
		Claim: &mq.Claim{Marker: m, Ref: key, Prior: prior}}
}

// TestResolveFramesAfterRestart: after the queue is reopened (the process died between a keyed
// frame's publish and its idempotency commit, and the duplicate window may be long over), the
// frame a claim was marked with is found in the stream by its message id and the bound it
// carries, with the claimed record's position; a record that is not in it, a frame that was never
// stored and an id without a bound are not. A later attempt whose prior frame is the resolved
// one is answered as a duplicate at that position, storing nothing.
func TestResolveFramesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := embeddedmq.Config{Dir: dir, Partitions: 1}
	ctx := t.Context()
	m := &frameRecorder{}
	first := open(t, cfg)
	// Frames before the keyed ones, so the bound is not the stream's start.
	for range 3 {
		if _, err := first.Publish(ctx, mq.Record{Tenant: "acme", Table: "keyed", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := first.Publish(ctx, keyedRecord(m, "k1", ""))
	if err != nil {
		t.Fatal(err)
	}
	frame := m.frameOf("k1")
	if _, _, ok := strings.Cut(frame, "."); !ok {
		t.Fatalf("frame id %q carries no epoch and bound", frame)
	}
	// Another table of the partition stores frames; the next keyed frame of this one is bound
	// after them, not after this table's last frame.
	var busy mq.PublishResult
	for range 5 {
		if busy, err = first.Publish(ctx, mq.Record{Tenant: "acme", Table: "busy", Payload: []byte("y")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := first.Publish(ctx, keyedRecord(m, "k2", "")); err != nil {
		t.Fatal(err)
	}
	if bound := m.frameOf("k2")[strings.LastIndex(m.frameOf("k2"), ".")+1:]; bound != fmt.Sprint(busy.Position.Seq) {
		t.Fatalf("frame id %q: bound %s, want %d (the last frame stored in the partition, by any table)", m.frameOf("k2"), bound, busy.Position.Seq)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	second := open(t, cfg)
	before, err := second.Stats(ctx, "acme", "keyed")
	if err != nil {
		t.Fatal(err)
	}
	epochAndBound := frame[strings.Index(frame, "."):]
	marks := []jsmq.MarkedFrame{
		{Tenant: "acme", Table: "keyed", Frame: frame, QueueKey: "k1"},
		{Tenant: "acme", Table: "keyed", Frame: frame, QueueKey: "k2"},                               // not in the frame
		{Tenant: "acme", Table: "keyed", Frame: "frame-NEVERSTORED" + epochAndBound, QueueKey: "k3"}, // never published
		{Tenant: "acme", Table: "keyed", Frame: "frame-NOBOUND", QueueKey: "k1"},                     // an id without a bound
		{Tenant: "acme", Table: "other", Frame: frame, QueueKey: "k1"},                               // another table's subject
	}
	got, err := second.ResolveFrames(ctx, marks)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{frame + "@" + res.Position.String(), "", "", "", ""}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mark %d (%+v): resolved to %q, want %q", i, marks[i], got[i], want[i])
		}
	}

	// Another request given the resolved frame (the dedupe store never does that) is not
	// answered with the first one's position.
	other, err := second.Publish(ctx, keyedRecord(m, "k9", got[0]))
	if err != nil {
		t.Fatal(err)
	}
	if other.Duplicate {
		t.Fatalf("another request with the resolved frame: %+v, want it published", other)
	}
	before, err = second.Stats(ctx, "acme", "keyed")
	if err != nil {
		t.Fatal(err)
	}
	retry, err := second.Publish(ctx, keyedRecord(m, "k1", got[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !retry.Duplicate || retry.Position != res.Position {
		t.Fatalf("retry with the resolved frame: %+v, want a duplicate at %v", retry, res.Position)
	}
	after, err := second.Stats(ctx, "acme", "keyed")
	if err != nil {
		t.Fatal(err)
	}
	if after.Retained != before.Retained {
		t.Fatalf("the retry stored something: %d frames retained, %d before", after.Retained, before.Retained)
	}
}
