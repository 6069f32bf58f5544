package stream_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/stream"
)

// publishGarbage stores bytes that are no frame on table's ingest subject, as a foreign
// publisher on the queue's NATS server could, and returns their stream sequence.
func publishGarbage(t *testing.T, q *embeddedmq.Queue, table string) uint64 {
	t.Helper()
	jq, err := q.Handle.Queue()
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(jq.Names().Subject(tenant, table))
	msg.Data = []byte("\x00garbage")
	ack, err := jq.JetStream().PublishMsg(t.Context(), msg)
	if err != nil {
		t.Fatalf("publish garbage: %v", err)
	}
	return ack.Sequence
}

// TestUndecodableMessageGap: a stored message of the table that is not a frame reaches every
// subscriber (live and resuming, filtered or not) as one `event: gap` naming its position, and
// the stream goes on with the rows after it; resuming from the gap's id does not report it again.
func TestUndecodableMessageGap(t *testing.T) {
	q := openQueue(t, t.TempDir())
	s := newServer(t, q, stream.Config{})
	live := dial(t, streamURL(s, "events", ""), nil)
	filtered := dial(t, streamURL(s, "events", "where.name=nobody"), nil)
	probe := warm(t, q, "events", live)

	before := publish(t, q, "events", []any{1, "before"})
	bad := publishGarbage(t, q, "events")
	after := publish(t, q, "events", []any{2, "after"})

	gapID := eid(t, q, "events", mq.Position{Seq: bad, Index: ^uint32(0)})
	gapData := fmt.Sprintf(`{"from":"%s","reason":"undecodable","to":"%s"}`, eid(t, q, "events", mq.Position{Seq: bad}), gapID)
	check := func(name string, c *sseConn, wantRows bool) {
		t.Helper()
		if wantRows {
			if ev := c.nextRows(t); ev.ID != eid(t, q, "events", before) || ev.Data != "["+rowData(1, "before")+"]" {
				t.Fatalf("%s: first event %+v, want the row before the garbage at %s", name, ev, before)
			}
		}
		ev := c.next(t)
		for !wantRows && ev.Type == "" { // id-only lines of filtered-out events
			ev = c.next(t)
		}
		if ev.Type != "gap" || ev.ID != gapID || ev.Data != gapData {
			t.Fatalf("%s: event %+v, want gap id %s data %s", name, ev, gapID, gapData)
		}
		if wantRows {
			if ev := c.nextRows(t); ev.ID != eid(t, q, "events", after) {
				t.Fatalf("%s: event after the gap %+v, want rows at %s", name, ev, after)
			}
		}
	}
	check("live", live, true)
	check("live filtered", filtered, false)
	check("resumed", dial(t, streamURL(s, "events", "since="+eid(t, q, "events", probe)), nil), true)

	// The stream keeps serving: a later row arrives on the live stream.
	later := publish(t, q, "events", []any{3, "later"})
	if ev := live.nextRows(t); ev.ID != eid(t, q, "events", later) {
		t.Fatalf("live after the gap: %+v, want rows at %s", ev, later)
	}
	again := dial(t, streamURL(s, "events", ""), map[string]string{"Last-Event-ID": gapID})
	if ev := again.next(t); ev.Type != "rows" || ev.ID != eid(t, q, "events", after) {
		t.Fatalf("resumed from the gap id: %q %s, want rows at %s", ev.Type, ev.ID, after)
	}
	if n := gatherCounter(t, s.reg, "wavehouse_stream_events_sent_total", "event", "gap"); n < 3 {
		t.Fatalf("gap events counted %v, want at least 3", n)
	}
}
