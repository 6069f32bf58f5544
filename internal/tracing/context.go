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

// Start starts a span of kind with t as a child of ctx's span. With a nil t (tracing off) it
// returns ctx as is and a span that records nothing, without allocating, so the hot paths pay
// nothing for their spans when tracing is off.
func Start(ctx context.Context, t trace.Tracer, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.Start(ctx, name, trace.WithSpanKind(kind))
}
