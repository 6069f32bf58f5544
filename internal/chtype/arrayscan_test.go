package chtype

import (
	"bytes"
	"encoding/json"
	"testing"
)

func scanAll(raw string) ([]string, bool) {
	var sc ArrayScanner
	sc.Reset([]byte(raw))
	var out []string
	for e, ok := sc.Next(); ok; e, ok = sc.Next() {
		out = append(out, string(e))
	}
	return out, sc.Valid()
}

func TestArrayScanner(t *testing.T) {
	cases := []struct {
		in    string
		elems []string
		valid bool
	}{
		{`[]`, nil, true},
		{` [ ] `, nil, true},
		{`[1]`, []string{"1"}, true},
		{`[ 1 , "a,]" ,null,[2,[3]], {"k":[1]} ]`, []string{"1", `"a,]"`, "null", "[2,[3]]", `{"k":[1]}`}, true},
		{`["\"]",2]`, []string{`"\"]"`, "2"}, true},
		{`[1,]`, []string{"1"}, false},
		{`[,1]`, nil, false},
		{`[1 2]`, []string{"1"}, false},
		{`[1]]`, []string{"1"}, false},
		{`[1] x`, nil, false},
		{`["a]`, nil, false},
		{`[[1]`, []string{"[1]"}, false},
		{`{}`, nil, false},
		{``, nil, false},
		{`[`, nil, false},
	}
	for _, c := range cases {
		elems, valid := scanAll(c.in)
		if valid != c.valid || len(elems) != len(c.elems) {
			t.Errorf("%q: elems %q valid %v, want %q %v", c.in, elems, valid, c.elems, c.valid)
			continue
		}
		for i := range elems {
			if elems[i] != c.elems[i] {
				t.Errorf("%q: elem %d = %q, want %q", c.in, i, elems[i], c.elems[i])
			}
		}
	}
}

// TestArrayScannerNoAlloc holds the scanner to its promise of not allocating.
func TestArrayScannerNoAlloc(t *testing.T) {
	raw := []byte(`[1,"two",[3,4],{"f":5},null]`)
	var sc ArrayScanner
	allocs := testing.AllocsPerRun(100, func() {
		sc.Reset(raw)
		for _, ok := sc.Next(); ok; _, ok = sc.Next() {
		}
	})
	if allocs != 0 || !sc.Valid() || sc.Len() != 5 {
		t.Fatalf("allocs %v valid %v len %d", allocs, sc.Valid(), sc.Len())
	}
}

// FuzzArrayScanner checks that the scanner never panics and that, on valid JSON arrays, it
// yields exactly the elements encoding/json finds.
func FuzzArrayScanner(f *testing.F) {
	for _, s := range []string{`[]`, `[1,"a",[2],{"b":[3]}]`, `["\"",null ]`, `[1,]`, `[[[`, `["\u00e9"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var sc ArrayScanner
		sc.Reset(raw)
		var got [][]byte
		for e, ok := sc.Next(); ok; e, ok = sc.Next() {
			got = append(got, e)
		}
		var want []json.RawMessage
		if json.Unmarshal(raw, &want) != nil || want == nil {
			return
		}
		if !sc.Valid() || len(got) != len(want) {
			t.Fatalf("%q: scanner valid %v with %d elements, encoding/json %d", raw, sc.Valid(), len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: element %d %q, encoding/json %q", raw, i, got[i], want[i])
			}
		}
	})
}
