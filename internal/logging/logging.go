// Package logging builds the process logger (log/slog, JSON by default) and carries the request
// id and W3C trace id through a context so that every line logged for a request names them.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Options selects the log level and format.
type Options struct {
	// Level is debug, info, warn or error.
	Level string
	// Format is json or text.
	Format string
}

// ParseLevel maps a level name to its slog level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// New returns a logger writing to w in the chosen format. Lines logged with a context that
// carries a request id or trace id get them as attributes.
func New(w io.Writer, opts Options) (*slog.Logger, error) {
	level, err := ParseLevel(opts.Level)
	if err != nil {
		return nil, err
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(opts.Format) {
	case "", "json":
		h = slog.NewJSONHandler(w, hopts)
	case "text":
		h = slog.NewTextHandler(w, hopts)
	default:
		return nil, fmt.Errorf("unknown log format %q (want json or text)", opts.Format)
	}
	return slog.New(contextHandler{h}), nil
}

type ctxKey int

const (
	requestIDKey ctxKey = iota
	traceIDKey
)

// WithRequestID returns a context whose log lines carry request_id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestID returns the request id stored in ctx, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}

// WithTraceID returns a context whose log lines carry trace_id.
func WithTraceID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceIDKey, id)
}

// TraceID returns the trace id stored in ctx, or "".
func TraceID(ctx context.Context) string {
	s, _ := ctx.Value(traceIDKey).(string)
	return s
}

// contextHandler adds the request and trace ids found in the record's context, and the span id
// of the context's span when there is one.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			// A span is current (tracing is on): name it, so the line joins the trace.
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		} else if id := TraceID(ctx); id != "" {
			r.AddAttrs(slog.String("trace_id", id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}
