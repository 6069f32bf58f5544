package payload

import (
	"errors"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := []Segment{
		{Columns: []string{"a", "b"}, Rows: [][]byte{[]byte(`[1,"x"]`), []byte(`[2,"y\nz"]`)}},
		{Columns: []string{"a"}, Rows: nil},
		{Columns: []string{"a", "c.d", "é"}, Rows: [][]byte{[]byte(`[3,null,"ü"]`)}},
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Segment{in[0], in[2]}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %q\nwant %q", out, want)
	}
	if n := Rows(b); n != 3 {
		t.Fatalf("Rows = %d", n)
	}
}

func TestEncodeRefusesMultilineRow(t *testing.T) {
	if _, err := Encode([]Segment{{Columns: []string{"a"}, Rows: [][]byte{[]byte("[1,\n2]")}}}); err == nil {
		t.Fatal("a row with a newline was encoded")
	}
	if _, err := Encode([]Segment{{Columns: []string{"a"}, Rows: [][]byte{[]byte(`{"a":1}`)}}}); err == nil {
		t.Fatal("an object row was encoded")
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		`[1]` + "\n",
		`{"v":1,"columns":["a"]}` + "\n[1]",
		`{"v":2,"columns":["a"]}` + "\n[1]\n",
		`{"v":1,"columns":[]}` + "\n",
		`{"v":1,` + "\n",
		"\n",
		"x\n",
	} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", in, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"columns":["a"]}` + "\n[1]\n"))
	f.Add([]byte("{}\n[]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		segs, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(segs)
		if err != nil {
			return // rows that Decode accepts but Encode refuses (e.g. "[" alone) are fine to refuse
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("re-encoded payload does not decode: %v", err)
		}
	})
}
