package writer

import (
	"fmt"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestUpgradeInsertsVersion1Backlog: a backlog queued by the previous release (version 1,
// canonical JSON frames, written with that release's encoder) and frames of this release
// interleaved behind it all insert after an upgrade, each row exactly once, with a poison
// record of the old format dead-lettered as before.
func TestUpgradeInsertsVersion1Backlog(t *testing.T) {
	e := newEnv(t)
	var ps []mq.Position
	ps = append(ps, e.publishV1(t, `[1,"a"]`, `[2,"b"]`), e.publishV1(t, `["not a number","poison"]`))
	ps = append(ps, e.publish(t, `[3,"c"]`), e.publishV1(t, `[4,"d"]`), e.publish(t, `[5,"e"]`, `[6,"f"]`))
	e.run(t)
	e.waitSettled(t, ps...)
	if got := e.ids(t); fmt.Sprint(got) != "[1 2 3 4 5 6]" {
		t.Fatalf("inserted ids %v, want 1-6 once each", got)
	}
	entries, err := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if err != nil || len(entries) != 1 || entries[0].Record.Position != ps[1] {
		t.Fatalf("dead letters %+v (%v), want the version 1 poison record", entries, err)
	}
}

// TestMalformedPayloadIsDeadLettered: a record whose payload names an unknown format version,
// or whose binary rows are cut short, is dead-lettered with code malformed_payload; the records
// around it insert.
func TestMalformedPayloadIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	good := e.publish(t, `[1,"a"]`)
	unknown := e.publishPayload(t, []byte{0x09, 1, 2, 3})
	cut := e.publishPayload(t, []byte{0x02, 0x02, 0x02, 'i', 'd'})
	last := e.publish(t, `[2,"b"]`)
	e.run(t)
	e.waitSettled(t, good, unknown, cut, last)
	if got := e.ids(t); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("inserted ids %v, want [1 2]", got)
	}
	entries, err := e.q.DLQ().List(t.Context(), "t", "events", 0, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("dead letters %+v (%v), want the two malformed records", entries, err)
	}
	for _, en := range entries {
		if en.Reason.Code != "malformed_payload" {
			t.Errorf("dead letter of %v has code %q, want malformed_payload", en.Record.Position, en.Reason.Code)
		}
	}
}
