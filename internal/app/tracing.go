package app

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/wavehouse/wavehouse/internal/buildinfo"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/tracing"
)

// buildTracing returns the process's tracer provider: the no-op one unless tracing.enabled, else
// an OTLP/HTTP exporter configured by the OTEL_* variables. Run flushes it on shutdown.
func buildTracing(cfg config.Config) (tracing.Provider, error) {
	return tracing.New(context.Background(), tracing.Options{Enabled: cfg.Tracing.Enabled, InstanceID: cfg.InstanceID, Version: buildinfo.Get().Version})
}

// traced wraps the API handler in the OpenTelemetry HTTP middleware when tracing is on: a server
// span per request continuing the client's traceparent, named by its method until httpx.Routes
// renames it after the route pattern. Off, h is returned as is (no cost per request).
func traced(h http.Handler, p tracing.Provider) http.Handler {
	if !p.On {
		return h
	}
	return otelhttp.NewHandler(h, "http",
		otelhttp.WithTracerProvider(p),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()), // metrics are Prometheus's
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}
