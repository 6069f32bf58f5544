package stream

import (
	"encoding/json"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/payload/payloadtest"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/store"
)

// TestRenderSegments: a record whose rows omitted different DEFAULT columns
// has several segments; each row object carries its own segment's columns,
// and where/columns resolve per segment.
func TestRenderSegments(t *testing.T) {
	ab, err := payloadtest.Binary([]string{"a", "b"}, []string{"UInt8", "String"}, `[1,"x"]`, `[2,"y"]`)
	if err != nil {
		t.Fatal(err)
	}
	a, err := payloadtest.Binary([]string{"a"}, []string{"Int64"}, `[3]`)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := payload.Encode([]payload.Segment{ab, a})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := payloadtest.EncodeV1([]payload.Segment{
		{Columns: []string{"a", "b"}, Rows: [][]byte{[]byte(`[1,"x"]`), []byte(`[2,"y"]`)}},
		{Columns: []string{"a"}, Rows: [][]byte{[]byte(`[3]`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]byte{"binary": bin, "version 1": v1} {
		t.Run(name, func(t *testing.T) { checkRenderSegments(t, p) })
	}
}

func checkRenderSegments(t *testing.T, p []byte) {
	ev := newEvent("e", &mq.Record{Payload: p, Position: mq.Position{Seq: 7, Index: 2}})
	cases := []struct {
		v    view
		want string
	}{
		{view{}, "id: e-7-2\nevent: rows\ndata: [{\"a\":1,\"b\":\"x\"},{\"a\":2,\"b\":\"y\"},{\"a\":3}]\n\n"},
		{view{columns: []string{"b"}}, "id: e-7-2\nevent: rows\ndata: [{\"b\":\"x\"},{\"b\":\"y\"},{}]\n\n"},
		{view{where: []cond{{"b", "y"}}}, "id: e-7-2\nevent: rows\ndata: [{\"a\":2,\"b\":\"y\"}]\n\n"},
		{view{where: []cond{{"a", "3"}}}, "id: e-7-2\nevent: rows\ndata: [{\"a\":3}]\n\n"},
		{view{where: []cond{{"a", "4"}}}, ""},
	}
	for _, c := range cases {
		got, _ := ev.render(c.v)
		if string(got) != c.want {
			t.Errorf("view %+v:\n got %q\nwant %q", c.v, got, c.want)
		}
	}
}

// TestRenderMalformed: a payload that cannot be decoded renders no event.
func TestRenderMalformed(t *testing.T) {
	ev := newEvent("e", &mq.Record{Payload: []byte("not a payload\n")})
	if got, n := ev.render(view{}); got != nil || n != 0 {
		t.Fatalf("malformed payload rendered %q", got)
	}
}

// TestBinaryRendersAsVersion1: an event of RowBinary rows renders the same SSE frame, for every
// view, as the event of the same rows in the version 1 canonical JSON of the previous release —
// over strings with escapes, 64-bit integers, time zones, decimals, nulls, arrays, tuples, maps.
func TestBinaryRendersAsVersion1(t *testing.T) {
	cols := []string{"s", "u", "i", "f", "dt", "tz", "d", "dec", "n", "arr", "tup", "m", "e", "uid"}
	types := []string{"String", "UInt64", "Int64", "Float64", "DateTime", "DateTime('Asia/Tokyo')", "Date", "Decimal(18, 4)",
		"Nullable(String)", "Array(Nullable(Int32))", "Tuple(a String, b UInt8)", "Map(String, UInt16)", "Enum8('x' = 1, 'y' = 2)", "UUID"}
	in := []string{
		`["héllo \"q\" \\ \n\t<&>",18446744073709551615,-9223372036854775808,-1.25e-10,"2024-01-02T03:04:05Z","2024-01-02 12:04:05","2024-02-29","-1.5",null,[1,null,-3],{"a":"x","b":255},{"k":1,"l":2},"y","6f9619ff8b86d011b42d00cf4fc964ff"]`,
		`["",0,0,0.1,1700000000,0,"1970-01-01",0,"text",[],["",0],{},1,"00000000-0000-0000-0000-000000000000"]`,
	}
	seg, err := payloadtest.Binary(cols, types, in...)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := payload.Encode([]payload.Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	canon := payload.Segment{Columns: cols}
	for _, row := range in {
		var vals []json.RawMessage
		if err := json.Unmarshal([]byte(row), &vals); err != nil {
			t.Fatal(err)
		}
		line := []byte{'['}
		for c, v := range vals {
			ty, err := chtype.Parse(types[c])
			if err != nil {
				t.Fatal(err)
			}
			cv, err := ty.Canonical(v)
			if err != nil {
				t.Fatalf("column %s: %v", cols[c], err)
			}
			if c > 0 {
				line = append(line, ',')
			}
			line = append(line, cv...)
		}
		canon.Rows = append(canon.Rows, append(line, ']'))
	}
	v1, err := payloadtest.EncodeV1([]payload.Segment{canon})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(p []byte) *event { return newEvent("e", &mq.Record{Payload: p, Position: mq.Position{Seq: 3}}) }
	for _, v := range []view{{}, {columns: []string{"m", "s"}}, {where: []cond{{"e", "y"}}}, {where: []cond{{"u", "0"}}}} {
		want, wn := rec(v1).render(v)
		got, gn := rec(bin).render(v)
		if string(got) != string(want) || gn != wn || len(want) == 0 {
			t.Errorf("view %+v:\nbinary    %q (%d rows)\nversion 1 %q (%d rows)", v, got, gn, want, wn)
		}
	}
}

// TestRenderRowPolicy: under a row policy only the rows it matches are sent, without the
// columns it may not read; a row lacking the filter's column is not sent.
func TestRenderRowPolicy(t *testing.T) {
	all, err := payloadtest.Binary([]string{"id", "owner", "secret"}, []string{"String", "String", "String"}, `["a1","alice","s1"]`, `["b1","bob","s2"]`)
	if err != nil {
		t.Fatal(err)
	}
	idOnly, err := payloadtest.Binary([]string{"id"}, []string{"String"}, `["x"]`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := payload.Encode([]payload.Segment{all, idOnly})
	if err != nil {
		t.Fatal(err)
	}
	f, err := policy.ParseFilter("owner = {claim:sub}")
	if err != nil {
		t.Fatal(err)
	}
	str, _ := chtype.Parse("String")
	cols := []store.Column{{Name: "id", Type: str}, {Name: "owner", Type: str}, {Name: "secret", Type: str}}
	b, err := (&policy.Table{DenyColumns: []string{"secret"}, Filter: f}).Bind("t", cols, policy.Claims{"sub": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvent("e", &mq.Record{Payload: p, Position: mq.Position{Seq: 1}})
	got, n := ev.render(view{rows: b})
	if want := "id: e-1-0\nevent: rows\ndata: [{\"id\":\"a1\",\"owner\":\"alice\"}]\n\n"; string(got) != want || n != 1 {
		t.Errorf("render under alice's policy:\n got %q (%d rows)\nwant %q", got, n, want)
	}
	if herr := deniedColumn(view{rows: b, where: []cond{{"secret", "s2"}}}); herr == nil || herr.Code != "policy.column_denied" {
		t.Errorf("a where on a denied column: %v, want policy.column_denied", herr)
	}
}
