package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// listener is an HTTP server as a Component: Start binds (so a taken port fails boot), Run serves,
// Stop stops accepting and waits for in-flight requests within the deadline.
type listener struct {
	name   string
	addr   string
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
}

func newListener(name, addr string, h http.Handler, log *slog.Logger, readHeader, idle time.Duration) *listener {
	return &listener{
		name: name, addr: addr, logger: log,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeader,
			IdleTimeout:       idle,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
}

func (l *listener) Name() string { return l.name }

func (l *listener) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", l.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", l.addr, err)
	}
	l.ln = ln
	l.logger.Info("listening", "listener", l.name, "addr", ln.Addr().String())
	return nil
}

// Addr is the bound address (useful when the config asked for port 0).
func (l *listener) Addr() string {
	if l.ln == nil {
		return ""
	}
	return l.ln.Addr().String()
}

func (l *listener) Run(context.Context) error {
	if err := l.srv.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (l *listener) Stop(ctx context.Context) error {
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		_ = l.srv.Close()
	}
	return err
}
