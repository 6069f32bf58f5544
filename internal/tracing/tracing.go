// Package tracing builds the process's OpenTelemetry tracer provider and holds the few helpers
// the instrumented packages share: the W3C traceparent of a span context and back, so that a
// request's context can ride in the queue headers to the insert that carries its rows.
//
// Off (the default), the provider is the no-op one and Scoped is nil: Start then returns at once
// without allocating, nothing is recorded or exported, and the HTTP middleware is not installed.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the spans wavehouse creates itself.
const ScopeName = "github.com/wavehouse/wavehouse"

// Options say whether to trace and name the process in the spans' resource.
type Options struct {
	// Enabled turns tracing on (tracing.enabled); OTEL_SDK_DISABLED=true turns it off again.
	Enabled bool
	// InstanceID and Version become service.instance.id and service.version.
	InstanceID, Version string
}

// Provider is the process's tracer provider and the way to flush it.
type Provider struct {
	trace.TracerProvider
	// On is true when spans are recorded and exported.
	On       bool
	shutdown func(context.Context) error
}

// Scoped is the tracer of wavehouse's own spans, nil when tracing is off (see Start).
func (p Provider) Scoped() trace.Tracer {
	if !p.On {
		return nil
	}
	return p.Tracer(ScopeName)
}

// Shutdown exports the spans still buffered and stops the exporter; a no-op when off.
func (p Provider) Shutdown(ctx context.Context) error {
	if p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// Off is the no-op provider.
func Off() Provider { return Provider{TracerProvider: noop.NewTracerProvider()} }

// New returns the no-op provider when tracing is off, else an SDK provider batching spans to an
// OTLP/HTTP exporter. The exporter, sampler, batch processor and resource read the standard
// OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); the service name defaults to "wavehouse".
// New connects to nothing: the exporter dials on its first export.
func New(ctx context.Context, o Options) (Provider, error) {
	if !o.Enabled || sdkDisabled() {
		return Off(), nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return Provider{}, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later options win in resource.New, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(
		attribute.String("service.name", "wavehouse"),
		attribute.String("service.version", o.Version),
		attribute.String("service.instance.id", o.InstanceID),
	), resource.WithFromEnv())
	if err != nil {
		return Provider{}, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return Provider{TracerProvider: tp, On: true, shutdown: tp.Shutdown}, nil
}

func sdkDisabled() bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")))
	return err == nil && v
}
