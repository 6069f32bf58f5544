package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc := SpanContextOf(tp)
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() || Traceparent(sc) != tp {
		t.Fatalf("SpanContextOf(%s) = %+v, back %q", tp, sc, Traceparent(sc))
	}
	for _, bad := range []string{"", "00-aa-bb-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if sc := SpanContextOf(bad); sc.IsValid() || Traceparent(sc) != "" {
			t.Errorf("SpanContextOf(%q) is valid", bad)
		}
	}
}

// TestNewOffUnlessEnabled: off by default and with OTEL_SDK_DISABLED; on, spans are recorded.
func TestNewOffUnlessEnabled(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		enabled  bool
		disabled string
		on       bool
	}{{false, "", false}, {true, "true", false}, {true, "", true}} {
		t.Setenv("OTEL_SDK_DISABLED", c.disabled)
		p, err := New(ctx, Options{Enabled: c.enabled})
		if err != nil {
			t.Fatal(err)
		}
		_, span := p.Tracer(ScopeName).Start(ctx, "x")
		if p.On != c.on || span.IsRecording() != c.on {
			t.Errorf("enabled %v OTEL_SDK_DISABLED=%q: On %v, recording %v; want %v", c.enabled, c.disabled, p.On, span.IsRecording(), c.on)
		}
		span.End()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
}

// TestStartOffAllocatesNothing: with tracing off (nil tracer) a span costs no allocation and
// leaves the context as it was, so the request's span is not replaced by a no-op one.
func TestStartOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, nil, "publish", trace.SpanKindProducer)
		span.End()
		if c != ctx || span.IsRecording() {
			t.Fatal("off: context replaced or span recording")
		}
	})
	if allocs != 0 {
		t.Errorf("Start with tracing off: %v allocations, want 0", allocs)
	}
}
