package jsmq

import (
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

func FuzzEscapeToken(f *testing.F) {
	for _, s := range []string{"events", "a.b", "*", ">", "sp ace", "ünï", "表", "~7E", "%2E", "a~b", "-_-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeToken(s)
		if strings.ContainsAny(e, ".*> \t\r\n") {
			t.Fatalf("escaped %q = %q holds a subject metacharacter", s, e)
		}
		for i := 0; i < len(e); i++ {
			if e[i] < 0x21 || e[i] > 0x7e {
				t.Fatalf("escaped %q = %q holds byte %#x", s, e, e[i])
			}
		}
		back, err := UnescapeToken(e)
		if err != nil || back != s {
			t.Fatalf("unescape(%q) = %q, %v; want %q", e, back, err, s)
		}
	})
}

func TestParseSubjectRoundTrip(t *testing.T) {
	n := Names{Prefix: "wh", Partitions: 8}
	for _, tt := range [][2]string{{"acme", "events"}, {"a.b", "c*d"}, {"ü", "x y"}} {
		for _, subj := range []string{n.Subject(tt[0], tt[1]), n.DLQSubject(tt[0], tt[1])} {
			tenant, table, err := n.ParseSubject(subj)
			if err != nil || tenant != tt[0] || table != tt[1] {
				t.Fatalf("ParseSubject(%q) = %q, %q, %v; want %q, %q", subj, tenant, table, err, tt[0], tt[1])
			}
		}
		if p := n.Partition(tt[0], tt[1]); p != mq.PartitionOf(tt[0], tt[1], 8) || !strings.HasPrefix(n.Subject(tt[0], tt[1]), "wh.in.") {
			t.Fatalf("partition/subject mismatch for %v", tt)
		}
	}
}

func FuzzFrame(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "key", "traceparent", "00-ab-cd-01", int64(1700000000000000000))
	f.Add([]byte{}, "", "", "", int64(0))
	f.Fuzz(func(t *testing.T, payload []byte, key, hk, hv string, ns int64) {
		r := &mq.Record{Payload: payload, IdempotencyKey: key, Headers: map[string]string{hk: hv}}
		if ns != 0 {
			r.AcceptedAt = timeUnix(ns)
		}
		data := appendFrame(nil, []*mq.Record{r, r})
		if len(data) > 2*recordSize(r)+16 {
			t.Fatalf("frame of %d bytes exceeds the size bound %d", len(data), 2*recordSize(r)+16)
		}
		got, err := decodeFrame(data, "t", "tb", 9)
		if err != nil || len(got) != 2 {
			t.Fatalf("decode: %d records, %v", len(got), err)
		}
		for i, g := range got {
			if string(g.Payload) != string(payload) || g.IdempotencyKey != key || g.Headers[hk] != hv ||
				g.Position != (mq.Position{Seq: 9, Index: uint32(i)}) || !g.AcceptedAt.Equal(r.AcceptedAt) {
				t.Fatalf("record %d: %+v, want %+v", i, g, r)
			}
		}
		// Truncated frames are errors, never panics.
		for cut := 0; cut < len(data); cut += 1 + len(data)/16 {
			_, _ = decodeFrame(data[:cut], "t", "tb", 9)
		}
	})
}

func timeUnix(ns int64) time.Time { return time.Unix(0, ns).UTC() }
