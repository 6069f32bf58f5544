package jsmq

import (
	"testing"

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
