package payload_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
)

// TestDecoderMatchesDecode: a Decoder given payloads in turn (the same header again, a header
// differing only in a type, a two-segment payload, a version 1 payload, a malformed one) returns
// what Decode returns for each, and Key what Segment.Key returns; segments with the same header
// share their Columns, those with another do not.
func TestDecoderMatchesDecode(t *testing.T) {
	cols, types := []string{"id", "name"}, []string{"UInt64", "String"}
	p1 := payloadtest.Encode(t, cols, types, `[1,"a"]`)
	p2 := payloadtest.Encode(t, cols, types, `[2,"bc"]`, `[3,""]`)
	p3 := payloadtest.Encode(t, cols, []string{"UInt32", "String"}, `[4,"d"]`)
	a, err := payloadtest.Binary(cols, types, `[5,"e"]`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := payloadtest.Binary([]string{"id"}, []string{"UInt64"}, `[6]`)
	if err != nil {
		t.Fatal(err)
	}
	p4, err := payload.Encode([]payload.Segment{a, b, a})
	if err != nil {
		t.Fatal(err)
	}
	v1 := []byte(`{"v":1,"columns":["id"]}` + "\n[7]\n")
	var d payload.Decoder
	var firstCols []string
	for i, p := range [][]byte{p1, p2, p3, p1, p4, v1, p2} {
		want, err := payload.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Decode(p)
		if err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("payload %d: got %+v\nwant %+v", i, got, want)
		}
		for _, s := range got {
			if k := d.Key(s); k != s.Key() {
				t.Fatalf("payload %d: Key %q, want %q", i, k, s.Key())
			}
		}
		switch i {
		case 0:
			firstCols = got[0].Columns
		case 1:
			if &got[0].Columns[0] != &firstCols[0] {
				t.Fatal("a repeated header was decoded again")
			}
		case 2:
			if &got[0].Columns[0] == &firstCols[0] {
				t.Fatal("a header with another type shares the first header's columns")
			}
		}
	}
	if _, err := d.Decode(p1[:len(p1)-1]); !errors.Is(err, payload.ErrMalformed) {
		t.Fatalf("truncated payload: %v, want ErrMalformed", err)
	}
	if _, err := d.Decode([]byte{payload.Version, 1, 9, 'i'}); !errors.Is(err, payload.ErrMalformed) {
		t.Fatalf("truncated header: %v, want ErrMalformed", err)
	}
}
