package writer

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wavehouse/wavehouse/internal/tracing"
)

// traceInsert describes an insert statement on its span and links the span to the request span
// of every record whose rows it carries (once per record, however many segments it has).
func traceInsert(span trace.Span, table string, units []unit, rows int) {
	span.SetAttributes(attribute.String("wavehouse.table", table), attribute.Int("wavehouse.rows", rows),
		attribute.Int("wavehouse.records", countRecords(units)))
	seen := map[string]bool{}
	for _, u := range units {
		if u.traceparent == "" || seen[u.traceparent] {
			continue
		}
		seen[u.traceparent] = true
		if sc := tracing.SpanContextOf(u.traceparent); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
}

func countRecords(units []unit) int {
	seen := map[recKey]bool{}
	for _, u := range units {
		seen[u.rec] = true
	}
	return len(seen)
}
