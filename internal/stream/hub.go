package stream

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// hub is the one live queue reader of a table in this process; it fans each
// record out to the table's live subscribers without ever waiting for one.
type hub struct {
	key    mq.TableKey
	cancel context.CancelFunc
	// subs is replaced (copy on write) under Service.mu and read by the
	// reader goroutine without a lock.
	subs atomic.Pointer[[]*subscriber]
}

// join adds sub to the table's hub, starting the hub's reader when it is
// the first subscriber. It reports false after Close.
func (s *Service) join(key mq.TableKey, sub *subscriber) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	h := s.hubs[key]
	if h == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		h = &hub{key: key, cancel: cancel}
		h.subs.Store(&[]*subscriber{})
		s.hubs[key] = h
		s.wg.Add(1)
		s.metrics.readers.Inc()
		go s.runHub(ctx, h)
	}
	next := append(slices.Clone(*h.subs.Load()), sub)
	h.subs.Store(&next)
	return true
}

// leave removes sub from its hub and stops the hub's reader when no
// subscriber is left.
func (s *Service) leave(key mq.TableKey, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hubs[key]
	if h == nil {
		return
	}
	cur := *h.subs.Load()
	i := slices.Index(cur, sub)
	if i < 0 {
		return
	}
	next := slices.Delete(slices.Clone(cur), i, i+1)
	h.subs.Store(&next)
	if len(next) == 0 {
		delete(s.hubs, key)
		h.cancel()
	}
}

// runHub reads the table live and fans out. When the reader fails, every
// subscriber of the hub is ended: their clients reconnect with
// Last-Event-ID and resume from history, so nothing is lost.
func (s *Service) runHub(ctx context.Context, h *hub) {
	defer s.wg.Done()
	defer s.metrics.readers.Dec()
	err := s.deps.Queue.Replay(ctx, h.key.Tenant, h.key.Table, mq.Cursor{After: mq.Latest}, func(e mq.Event) error {
		var ev *event
		switch {
		case e.Record != nil:
			ev = newEvent(e.Epoch, e.Record)
		case e.Gap != nil:
			ev = newGapEvent(e.Epoch, e.Gap)
		default:
			return nil
		}
		for _, sub := range *h.subs.Load() {
			gapStarted, disconnected := sub.offer(ev)
			if gapStarted {
				s.metrics.gaps.Inc()
			}
			if disconnected {
				s.metrics.disconnects.WithLabelValues("slow").Inc()
			}
		}
		return nil
	})
	if ctx.Err() == nil {
		s.deps.Log.Warn("stream: live queue reader ended", "tenant", h.key.Tenant, "table", h.key.Table, "error", err)
	}
	if err == nil {
		err = errors.New("stream: live reader ended")
	}
	s.mu.Lock()
	if s.hubs[h.key] == h {
		delete(s.hubs, h.key)
	}
	subs := *h.subs.Load()
	h.subs.Store(&[]*subscriber{})
	s.mu.Unlock()
	h.cancel()
	for _, sub := range subs {
		sub.end(err)
	}
}
