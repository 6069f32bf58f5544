package stream

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/store"
)

// TestRenderSegments: a record whose rows omitted different DEFAULT columns
// has several segments; each row object carries its own segment's columns,
// and where/columns resolve per segment.
func TestRenderSegments(t *testing.T) {
	p, err := payload.Encode([]payload.Segment{
		{Columns: []string{"a", "b"}, Rows: [][]byte{[]byte(`[1,"x"]`), []byte(`[2,"y"]`)}},
		{Columns: []string{"a"}, Rows: [][]byte{[]byte(`[3]`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
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

// TestRenderRowPolicy: under a row policy only the rows it matches are sent, without the
// columns it may not read; a row lacking the filter's column is not sent.
func TestRenderRowPolicy(t *testing.T) {
	p, err := payload.Encode([]payload.Segment{
		{Columns: []string{"id", "owner", "secret"}, Rows: [][]byte{[]byte(`["a1","alice","s1"]`), []byte(`["b1","bob","s2"]`)}},
		{Columns: []string{"id"}, Rows: [][]byte{[]byte(`["x"]`)}},
	})
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
