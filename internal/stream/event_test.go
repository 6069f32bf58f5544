package stream

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
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
