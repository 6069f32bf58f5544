package request

import (
	"bytes"
	"encoding/json"
	"testing"
)

// jsonDepth returns the maximum nesting depth of the valid JSON document b.
func jsonDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, maxD := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return maxD
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
				maxD = max(maxD, depth)
			} else {
				depth--
			}
		}
	}
}

// FuzzScan holds the scanner to encoding/json's grammar: it accepts exactly the valid
// documents (within the nesting limit) and never reads past the input.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"],"b":{}}`, `[]`, `""`, `-0`, `01`, `1.`, `1e`,
		`"\ud800"`, "\"\x01\"", `{"a" 1}`, `[1,]`, `{"a":1,}`, `nul`, `"\q"`, " \t\r\n7 ", `[[[[]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := skipSpace(b, 0)
		end, serr := scanValue(b, i, 0)
		ok := serr == nil && skipSpace(b, end) == len(b)
		if serr != nil && (serr.off < 0 || serr.off > len(b)) {
			t.Fatalf("error offset %d outside the input of %d bytes", serr.off, len(b))
		}
		valid := json.Valid(b)
		switch {
		case ok && !valid:
			t.Fatalf("scanner accepted invalid JSON %q", b)
		case !ok && valid && jsonDepth(b) <= maxDepth:
			t.Fatalf("scanner refused valid JSON %q: %+v", b, serr)
		}
	})
}
