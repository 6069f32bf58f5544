package writer

import (
	"context"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// heldFrames is every frame the writer holds unsettled — buffered in a table queue or in a batch
// being inserted — by reference. It serves three rules:
//
//   - a frame is held once: the queue may deliver a frame again while it is held (its ack wait
//     ran out); the second delivery is dropped, the held one settles the frame;
//   - a held frame is kept alive: every ProgressInterval each is reported in progress, so the
//     queue does not hand it to another consumer (or back to this one) while a backlog drains;
//   - a partition is not pulled while its held bytes reach MaxBuffered, so what the writer holds
//     is bounded by memory, not by the queue's backlog.
type heldFrames struct {
	mu      sync.Mutex
	frames  map[mq.FrameRef]heldFrame
	bytes   map[int]int // per partition
	changed chan struct{}
}

type heldFrame struct {
	d     mq.Delivery
	bytes int
}

func newHeldFrames() *heldFrames {
	return &heldFrames{frames: map[mq.FrameRef]heldFrame{}, bytes: map[int]int{}, changed: make(chan struct{})}
}

// add holds d and reports true, or reports false when its frame is already held.
func (h *heldFrames) add(d mq.Delivery, bytes int) bool {
	ref := refOf(d)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.frames[ref]; dup {
		return false
	}
	h.frames[ref] = heldFrame{d: d, bytes: bytes}
	h.bytes[ref.Partition] += bytes
	return true
}

// release stops holding d's frame (after it was settled, or handed back).
func (h *heldFrames) release(d mq.Delivery) {
	ref := refOf(d)
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.frames[ref]
	if !ok || f.d != d {
		return
	}
	delete(h.frames, ref)
	h.bytes[ref.Partition] -= f.bytes
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitRoom blocks while partition p holds at least limit bytes; it returns false when ctx ends.
func (h *heldFrames) waitRoom(ctx context.Context, p, limit int) bool {
	for {
		h.mu.Lock()
		ok, ch := h.bytes[p] < limit, h.changed
		h.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// snapshot returns the held deliveries.
func (h *heldFrames) snapshot() []mq.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]mq.Delivery, 0, len(h.frames))
	for _, f := range h.frames {
		out = append(out, f.d)
	}
	return out
}

// keepAlive reports every held frame in progress every interval until ctx ends.
func (w *Writer) keepAlive(ctx context.Context) {
	if w.cfg.ProgressInterval <= 0 {
		return
	}
	t := time.NewTicker(w.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, d := range w.held.snapshot() {
			e, ok := d.(mq.Extender)
			if !ok {
				continue
			}
			// A failure (the frame just settled, the queue is down) is harmless: at worst the
			// frame is redelivered, and the redelivery is recognised by its plan or dropped
			// while this copy is held.
			if err := e.InProgress(ctx); err == nil {
				w.deps.Metrics.progress.Inc()
			}
		}
	}
}
