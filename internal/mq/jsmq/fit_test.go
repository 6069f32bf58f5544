package jsmq

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// TestKeyedBound: the first sequence a resolution may read, among frames young enough to keep
// for it: frames without a message id may go; a frame with one stays, and a marked frame's id
// keeps the stream from the sequence after the one it names (ResolveFrames reads from there),
// even when frames of other tables were stored between.
func TestKeyedBound(t *testing.T) {
	nc := testConn(t)
	q := testQueue(t, nc, Options{Topology: testTopology(t, "keyedbound")})
	subject := q.names.Subject("t", "e")
	pub := func(id string) uint64 {
		t.Helper()
		msg := nats.NewMsg(subject)
		msg.Data = appendFrame(nil, nil)
		if id != "" {
			msg.Header.Set(jetstream.MsgIDHeader, id)
		}
		ack, err := q.js.PublishMsg(t.Context(), msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
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
	marked := pub("frame-abc.epoch1." + strconv.FormatUint(plain[1], 10))
	if b := bound(plain[0], marked); b != keyed {
		t.Fatalf("a keyed frame at %d: bound %d, want %d", keyed, b, keyed)
	}
	if b := bound(keyed+1, marked); b != plain[1]+1 {
		t.Fatalf("a marked frame stored after %d: bound %d, want %d", plain[1], b, plain[1]+1)
	}
}
