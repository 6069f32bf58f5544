package jsmq

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestFitTarget: the first sequence to keep is estimated from the average frame size, rounded
// towards removing one frame more rather than one less, and never past the last frame.
func TestFitTarget(t *testing.T) {
	cases := []struct {
		name string
		st   jetstream.StreamState
		fit  uint64
		want uint64
	}{
		{"within the share", jetstream.StreamState{Msgs: 10, Bytes: 1000, FirstSeq: 5, LastSeq: 14}, 1000, 5},
		{"empty", jetstream.StreamState{FirstSeq: 7, LastSeq: 6}, 0, 7},
		{"exact frames", jetstream.StreamState{Msgs: 10, Bytes: 1000, FirstSeq: 5, LastSeq: 14}, 700, 8},
		{"part of a frame", jetstream.StreamState{Msgs: 10, Bytes: 1000, FirstSeq: 5, LastSeq: 14}, 650, 9},
		{"everything", jetstream.StreamState{Msgs: 10, Bytes: 1000, FirstSeq: 5, LastSeq: 14}, 0, 15},
	}
	for _, c := range cases {
		if got := fitTarget(c.st, c.fit); got != c.want {
			t.Errorf("%s: fitTarget(%+v, %d) = %d, want %d", c.name, c.st, c.fit, got, c.want)
		}
	}
}

// TestKeyedBound: among frames young enough to keep for a resolution, frames without a message
// id may go, and the first frame with one stays with every frame after it.
func TestKeyedBound(t *testing.T) {
	nc := testConn(t)
	q := testQueue(t, nc, Options{Topology: testTopology(t, "keyedbound")})
	subject := q.names.Subject("t", "e")
	pub := func(id string) uint64 { t.Helper(); return publishRaw(t, q, subject, id, nil) }
	bound := func(first, last uint64) uint64 {
		t.Helper()
		b, err := q.keyedBound(t.Context(), q.names.Stream(0), first, last)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var plain []uint64
	for range 4 {
		plain = append(plain, pub(""))
	}
	if b := bound(plain[0], plain[3]); b != plain[3]+1 {
		t.Fatalf("frames without a message id: bound %d, want %d (all may go)", b, plain[3]+1)
	}
	if b := bound(plain[0], plain[1]); b != plain[1]+1 {
		t.Fatalf("a scan up to %d: bound %d, want %d", plain[1], b, plain[1]+1)
	}
	keyed := pub("t.e:key-1")
	pub("frame-abc.epoch1." + strconv.FormatUint(plain[1], 10))
	if b := bound(plain[0], keyed+1); b != keyed {
		t.Fatalf("a keyed frame at %d: bound %d, want %d", keyed, b, keyed)
	}
}

// TestResolveAMarkedFrameWhoseBoundWasTrimmed: a marked frame's id names a sequence it was
// stored after, which can lie before an earlier keyed frame (other tables' frames were stored
// while it was marked). A trim to fit keeps the stream from that earlier frame on only; the
// marked frame, still stored, is resolved all the same (ResolveFrames reads from the first
// retained frame when its bound was trimmed).
func TestResolveAMarkedFrameWhoseBoundWasTrimmed(t *testing.T) {
	nc := testConn(t)
	q := testQueue(t, nc, Options{Topology: testTopology(t, "resolvetrimmed")})
	subject := q.names.Subject("t", "e")
	info, err := q.streamInfo(t.Context(), q.names.Stream(0))
	if err != nil {
		t.Fatal(err)
	}
	epoch := q.epoch(info)
	var plain []uint64
	for range 10 {
		plain = append(plain, publishRaw(t, q, subject, "", nil))
	}
	first := publishRaw(t, q, subject, "frame-one."+epoch+"."+strconv.FormatUint(plain[9], 10), nil)
	id := "frame-two." + epoch + "." + strconv.FormatUint(plain[2], 10)
	second := publishRaw(t, q, subject, id, []*mq.Record{{Tenant: "t", Table: "e", Payload: []byte("x"), IdempotencyKey: "qk2"}})
	b, err := q.keyedBound(t.Context(), q.names.Stream(0), plain[0], second)
	if err != nil || b != first {
		t.Fatalf("keyedBound = %d, %v; want the first keyed frame, %d", b, err, first)
	}
	s, err := q.js.Stream(t.Context(), q.names.Stream(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(t.Context(), jetstream.WithPurgeSequence(b)); err != nil {
		t.Fatal(err)
	}
	got, err := q.ResolveFrames(t.Context(), []MarkedFrame{{Tenant: "t", Table: "e", Frame: id, QueueKey: "qk2"}})
	want := id + "@" + mq.Position{Seq: second}.String()
	if err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("ResolveFrames after the trim = %q, %v; want %q (the frame is stored)", got, err, want)
	}
}

// publishRaw stores a frame of recs on subject with message id id ("" for none) and returns its
// sequence.
func publishRaw(t *testing.T, q *Queue, subject, id string, recs []*mq.Record) uint64 {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = appendFrame(nil, recs)
	if id != "" {
		msg.Header.Set(jetstream.MsgIDHeader, id)
	}
	ack, err := q.js.PublishMsg(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}
