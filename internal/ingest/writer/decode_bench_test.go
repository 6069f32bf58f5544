package writer

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// BenchmarkDecodeSingleRowBatch is the writer's work before an insert on the single-row load of
// docs/benchmarks.md: a batch of 20,000 one-row records in 40 frames, split into units and
// filtered of failed records (none).
func BenchmarkDecodeSingleRowBatch(b *testing.B) {
	seg := payload.Segment{Columns: []string{"id", "name"}, Types: []string{"UInt64", "String"},
		Data: []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'}, Count: 1}
	p, err := payload.Encode([]payload.Segment{seg})
	if err != nil {
		b.Fatal(err)
	}
	frames := make([][]mq.Record, 40)
	for i := range frames {
		frames[i] = make([]mq.Record, 500)
		for j := range frames[i] {
			frames[i][j] = mq.Record{Tenant: "t", Table: "events", Payload: p}
		}
	}
	w := &Writer{}
	b.ReportAllocs()
	for b.Loop() {
		failed := map[recKey]error{}
		groups, order := w.decode(frames, failed)
		if units := skipFailed(groups[order[0]], failed); len(units) != 20000 {
			b.Fatalf("%d units", len(units))
		}
	}
}
