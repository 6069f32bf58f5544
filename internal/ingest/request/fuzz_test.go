package request

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// FuzzParse holds Parse to its contract on arbitrary input: it never panics, and it returns
// either a consistent Result or a 4xx error.
func FuzzParse(f *testing.F) {
	seeds := []string{
		benchRow(1),
		"[" + benchRow(1) + "," + benchRow(2) + "]",
		string(ndjson(3)),
		`{"ts":"2026-01-01T00:00:00Z","id":"18446744073709551615","user_id":"B1E5C2A47D3F4E219A8B000000000001","event":"é","tags":[],"note":"\ud83d\ude00"}`,
		`[{"ts":0,"id":1,"user_id":"00000000-0000-0000-0000-000000000000","event":"","tags":["x"],"value":null},{}]`,
		`{"ts":0,"id":1,"id":2,"nope":[1,{"a":[]}],"value":"1e400"}`,
		`[1,"x",null,[],{"tags":[["a"]]}]`,
		"{\"ts\":0,\n\"id\":1}\n\n{\"ts\":0,\"id\":-1}\r\n",
		`{"id":}`,
		`[{"ts":0}`,
		"",
		"   ",
		"[]",
		`"\u00zz"`,
		"ts,id,user_id,event,tags\n0,1,00000000-0000-0000-0000-000000000000,\"a \"\"b\"\"\n\",\"['x','y''z']\"\r\n",
		"0\t1\t00000000-0000-0000-0000-000000000000\tx\\ty\t0\t['a\\'b']\t\\N\n",
		"ts,id,\"open\n",
	}
	for i, s := range seeds {
		f.Add(uint8(i), uint8(i%5), []byte(s))
	}
	cols := benchCols()
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = zw.Close() })
	cts := []string{"application/json", "application/x-ndjson", "application/jsonl; charset=utf-8", "application/ndjson", "text/plain",
		"text/csv", "text/csv; header=absent", "text/tab-separated-values; header=present", "text/tab-separated-values"}
	f.Fuzz(func(t *testing.T, ctChoice, ceChoice uint8, body []byte) {
		ct := cts[int(ctChoice>>1)%len(cts)]
		opt := Options{Partial: ctChoice&1 == 1}
		var ce string
		switch ceChoice % 5 {
		case 1:
			ce, body = "gzip", gzipBytes(t, body)
		case 2:
			ce, body = "zstd", zw.EncodeAll(body, nil)
		case 3:
			ce = "gzip" // the body as is: almost always corrupt
		case 4:
			ce = "zstd"
		}
		lim := Limits{MaxBodyBytes: 1 << 16, MaxRows: 64, MaxErrors: 5}
		res, herr := Parse(ct, ce, bytes.NewReader(body), cols, lim, opt)
		if herr != nil {
			if herr.Status < 400 || herr.Status > 499 || herr.Code == "" || herr.Message == "" {
				t.Fatalf("error outside the contract: %+v", herr)
			}
			if herr.Code == CodeInvalidRows && opt.Partial {
				t.Fatalf("a partial request failed with %s", herr.Code)
			}
			return
		}
		checkResult(t, res)
		if ct == "application/json" && ce == "" && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(res.Errors) > lim.MaxErrors || res.ErrorCount < res.Rejected || len(res.Errors) > res.ErrorCount {
			t.Fatalf("error counts: kept %d, count %d, rejected %d", len(res.Errors), res.ErrorCount, res.Rejected)
		}
		sum := 0
		for _, n := range res.ErrorsByCode {
			sum += n
		}
		if sum != res.ErrorCount {
			t.Fatalf("errors by code add up to %d, count %d", sum, res.ErrorCount)
		}
		if !opt.Partial && res.Rejected != 0 {
			t.Fatalf("an atomic request succeeded with %d rejected rows", res.Rejected)
		}
	})
}

// FuzzLiteral holds the text literal converter to producing valid JSON whenever it accepts.
func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"[1,NULL,-3]", "['a','b''c','d\\'e',\"q\"]", "{'k':1,2:[3]}", "(1,'x',(2,[]))", "[", "['", "{1}", "[+1,nan,inf]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		var l literal
		out, ok := l.appendLiteral(nil, s)
		if ok && !json.Valid(out) {
			t.Fatalf("%q became invalid JSON %q", s, out)
		}
	})
}
