package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/ops"
)

// The backend health probe: while the server is unreachable it is tried every
// backendRetryInterval; once reachable it is pinged every backendProbeInterval (when the backend
// has a ping), so /readyz notices an outage.
const (
	backendRetryInterval = time.Second
	backendProbeInterval = 5 * time.Second
	backendProbeTimeout  = 5 * time.Second
)

// backendHealth lets a process boot while a network backend (ClickHouse, DynamoDB) is
// unreachable — degraded, not dead (DESIGN.md) — and reports its state on /readyz
// ("degraded": {"<comp>": "unavailable: …"}). start and run are called one after the other by the
// lifecycle, so its fields need no lock.
type backendHealth struct {
	// comp names the component on /readyz and in logs.
	comp string
	// transient reports whether a failure of prepare may pass at boot (the server is down);
	// any other failure fails boot.
	transient func(error) bool
	// cause is the sentinel whose text is trimmed from the /readyz reason.
	cause error
	// bootWarn and downWarn are logged when the backend is unreachable at boot and later.
	bootWarn, downWarn string
	// prepare runs until it succeeded once; ping (optional) probes afterwards.
	prepare   func(ctx context.Context) error
	ping      func(ctx context.Context) error
	readiness *ops.Readiness
	log       *slog.Logger

	prepared bool
	down     bool
}

// start prepares the backend. A transient failure does not fail boot: the backend is reported
// degraded and run keeps trying.
func (h *backendHealth) start(ctx context.Context) error {
	err := h.probe(ctx, h.prepare)
	if err == nil {
		h.prepared = true
		return nil
	}
	if !h.transient(err) {
		return err
	}
	h.log.Warn(h.bootWarn, "error", err)
	h.degrade(err)
	return nil
}

// run probes the backend until ctx ends.
func (h *backendHealth) run(ctx context.Context) error {
	t := time.NewTimer(h.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		op := h.ping
		if !h.prepared {
			op = h.prepare
		}
		if op == nil {
			<-ctx.Done()
			return nil
		}
		err := h.probe(ctx, op)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if !h.down {
				h.log.Warn(h.downWarn, "error", err)
			}
			h.degrade(err)
		default:
			h.prepared = true
			if h.down {
				h.down = false
				h.readiness.Restore(h.comp)
				h.log.Info(h.comp + " reachable again")
			}
		}
		t.Reset(h.interval())
	}
}

func (h *backendHealth) interval() time.Duration {
	if h.down {
		return backendRetryInterval
	}
	return backendProbeInterval
}

func (h *backendHealth) probe(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, backendProbeTimeout)
	defer cancel()
	return op(ctx)
}

// degrade reports the backend on /readyz as "unavailable: <cause>".
func (h *backendHealth) degrade(err error) {
	h.down = true
	h.readiness.Degrade(h.comp, "unavailable: "+strings.Replace(err.Error(), h.cause.Error()+": ", "", 1))
}
