package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
)

func TestRoundTrip(t *testing.T) {
	a, err := payloadtest.Binary([]string{"a", "b"}, []string{"UInt64", "String"}, `[1,"x"]`, `[2,"y\nz"]`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := payloadtest.Binary([]string{"a", "c.d", "é"}, []string{"UInt8", "Nullable(Date)", "String"}, `[3,null,"ü"]`)
	if err != nil {
		t.Fatal(err)
	}
	in := []payload.Segment{a, {Columns: []string{"a"}, Types: []string{"UInt8"}}, c}
	b, err := payload.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != payload.Version {
		t.Fatalf("version byte %d", b[0])
	}
	out, err := payload.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []payload.Segment{in[0], in[2]}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %+v\nwant %+v", out, want)
	}
	if n := payload.Rows(b); n != 3 {
		t.Fatalf("Rows = %d", n)
	}
	vals, err := out[0].Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(vals); string(got) != `[[1,"x"],[2,"y\nz"]]` {
		t.Fatalf("Canonical = %s", got)
	}
	if out[0].Key() == out[1].Key() {
		t.Fatal("segments with different columns share a key")
	}
}

// TestDecodesVersion1 reads a payload exactly as the previous release wrote it.
func TestDecodesVersion1(t *testing.T) {
	v1 := []byte(`{"v":1,"columns":["a","b"]}` + "\n" + `[1,"x"]` + "\n" + `{"v":1,"columns":["a"]}` + "\n[2]\n")
	fixture, err := payloadtest.EncodeV1([]payload.Segment{
		{Columns: []string{"a", "b"}, Rows: [][]byte{[]byte(`[1,"x"]`)}},
		{Columns: []string{"a"}, Rows: [][]byte{[]byte(`[2]`)}},
	})
	if err != nil || string(fixture) != string(v1) {
		t.Fatalf("the version 1 fixture writes %q (%v), want %q", fixture, err, v1)
	}
	segs, err := payload.Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 2 || segs[0].Binary() || segs[0].Len() != 1 || string(segs[1].Rows[0]) != "[2]" {
		t.Fatalf("got %+v", segs)
	}
	if n := payload.Rows(v1); n != 2 {
		t.Fatalf("Rows = %d", n)
	}
	vals, err := segs[0].Canonical()
	if err != nil || string(vals[0][1]) != `"x"` {
		t.Fatalf("Canonical = %q, %v", vals, err)
	}
}

func TestEncodeRefusesJSONRows(t *testing.T) {
	if _, err := payload.Encode([]payload.Segment{{Columns: []string{"a"}, Rows: [][]byte{[]byte("[1]")}}}); err == nil {
		t.Fatal("a version 1 segment was encoded")
	}
	if _, err := payload.Encode([]payload.Segment{{Columns: []string{"a", "b"}, Types: []string{"UInt8"}, Data: []byte{1}, Count: 1}}); err == nil {
		t.Fatal("a segment with fewer types than columns was encoded")
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := payloadtest.Encode(t, []string{"a"}, []string{"UInt32"}, "[1]", "[2]")
	for _, in := range []string{
		`[1]` + "\n",
		`{"v":1,"columns":["a"]}` + "\n[1]",
		`{"v":2,"columns":["a"]}` + "\n[1]\n",
		`{"v":1,"columns":[]}` + "\n",
		`{"v":1,` + "\n",
		"\n",
		"x\n",
		"\x03\x01",
		"\x02\x00",
		string(good[:len(good)-1]),
		string(good[:3]),
	} {
		if _, err := payload.Decode([]byte(in)); !errors.Is(err, payload.ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", in, err)
		}
	}
}

// TestCanonicalRefusesMismatchedData: rows whose bytes do not match their types are reported,
// never rendered as something else.
func TestCanonicalRefusesMismatchedData(t *testing.T) {
	for _, s := range []payload.Segment{
		{Columns: []string{"a"}, Types: []string{"UInt32"}, Data: []byte{1, 0, 0, 0, 9}, Count: 1},
		{Columns: []string{"a"}, Types: []string{"UInt32"}, Data: []byte{1, 0, 0}, Count: 1},
		{Columns: []string{"a"}, Types: []string{"NoSuchType"}, Data: []byte{1}, Count: 1},
		{Columns: []string{"a"}, Rows: [][]byte{[]byte("[1,2]")}},
	} {
		if _, err := s.Canonical(); !errors.Is(err, payload.ErrMalformed) {
			t.Errorf("Canonical(%v) = %v, want ErrMalformed", s, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"columns":["a"]}` + "\n[1]\n"))
	f.Add([]byte("{}\n[]\n"))
	f.Add([]byte("\x02\x01\x01a\x06UInt32\x01\x04\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		segs, err := payload.Decode(b)
		if err != nil {
			return
		}
		for _, s := range segs {
			_, _ = s.Canonical()
		}
		if len(segs) == 0 || !segs[0].Binary() {
			return
		}
		again, err := payload.Encode(segs)
		if err != nil {
			t.Fatalf("a decoded version 2 payload does not encode: %v", err)
		}
		if _, err := payload.Decode(again); err != nil {
			t.Fatalf("re-encoded payload does not decode: %v", err)
		}
	})
}

// TestEncodeInPlace: the payload built around a segment's rows is byte for byte what Encode
// writes, and EncodeInPlace declines when the room before the rows is too small.
func TestEncodeInPlace(t *testing.T) {
	rows := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'}
	seg := payload.Segment{Columns: []string{"id", "s"}, Types: []string{"UInt64", "String"}, Count: 1}
	want, err := payload.Encode([]payload.Segment{{Columns: seg.Columns, Types: seg.Types, Count: 1, Data: rows}})
	if err != nil {
		t.Fatal(err)
	}
	room := payload.HeaderBound(2, len("id")+len("s")+len("UInt64")+len("String"))
	buf := append(make([]byte, room), rows...)
	seg.Data = buf[room:]
	got, ok, err := payload.EncodeInPlace(buf, room, seg)
	if err != nil || !ok || !bytes.Equal(got, want) || &got[len(got)-len(rows)] != &seg.Data[0] {
		t.Fatalf("in place: %q ok=%v err=%v, want %q around the rows", got, ok, err, want)
	}
	small := append(make([]byte, 3), rows...)
	seg.Data = small[3:]
	if _, ok, err := payload.EncodeInPlace(small, 3, seg); ok || err != nil {
		t.Fatalf("3 bytes of room: ok=%v err=%v, want declined", ok, err)
	}
	if _, _, err := payload.EncodeInPlace(buf, room, payload.Segment{Columns: seg.Columns, Types: seg.Types, Count: 1, Data: rows}); err == nil {
		t.Fatal("rows outside buf: no error")
	}
}

// TestRowsCountsUpToAFault: Rows counts a version 2 payload's rows without decoding it, the
// same as Decode's segments add up to, and a payload cut inside its second segment counts the
// first segment's rows.
func TestRowsCountsUpToAFault(t *testing.T) {
	a, err := payloadtest.Binary([]string{"a", "b"}, []string{"UInt64", "String"}, `[1,"x"]`, `[2,"y"]`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := payloadtest.Binary([]string{"a"}, []string{"UInt8"}, `[3]`, `[4]`, `[5]`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := payload.Encode([]payload.Segment{a, c})
	if err != nil {
		t.Fatal(err)
	}
	if n := payload.Rows(b); n != 5 {
		t.Fatalf("Rows = %d, want 5", n)
	}
	if n := payload.Rows(b[:len(b)-1]); n != 2 {
		t.Fatalf("Rows of a payload cut in its second segment = %d, want the first segment's 2", n)
	}
}

// BenchmarkRows counts the rows of a one-row payload of four columns, as the writer does for
// every record it acknowledges.
func BenchmarkRows(b *testing.B) {
	p, err := payloadtest.Binary([]string{"id", "name", "score", "ts"}, []string{"UInt64", "String", "Float64", "DateTime"},
		`[1,"name-1",0.5,"2026-12-07 12:00:00"]`)
	if err != nil {
		b.Fatal(err)
	}
	buf, err := payload.Encode([]payload.Segment{p})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if payload.Rows(buf) != 1 {
			b.Fatal("want 1 row")
		}
	}
}
