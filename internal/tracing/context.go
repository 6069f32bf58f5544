package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Traceparent formats sc as a W3C version-00 traceparent; "" when sc is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// SpanContextOf parses a W3C traceparent (as stored in a queue record's headers) into the remote
// span context it names; the zero SpanContext when tp is not a valid one.
func SpanContextOf(tp string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), oneHeader(tp))
	return trace.SpanContextFromContext(ctx)
}

// oneHeader is a propagation.TextMapCarrier holding only a traceparent.
type oneHeader string

func (h oneHeader) Get(key string) string {
	if key == "traceparent" {
		return string(h)
	}
	return ""
}

func (oneHeader) Set(string, string) {}

func (oneHeader) Keys() []string { return []string{"traceparent"} }
