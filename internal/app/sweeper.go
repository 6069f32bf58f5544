package app

import (
	"context"
	"errors"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/sweeper"
)

// buildSweeper creates the sweeper role. The coordinator of the nats backend only exists once
// the queue is up, so the sweeper is built when its component starts.
func buildSweeper(e env, queue mq.Queue, co *coordRef, dd dedupe.Store) Component {
	var s *sweeper.Sweeper
	start := func(context.Context) error {
		c := co.get()
		if c == nil {
			return errors.New("sweeper: no coordinator")
		}
		ds, _ := dd.(dedupe.Sweeper)
		dlq, _ := queue.DLQ().(mq.DeadLetterExpirer)
		journal, _ := queue.(mq.JournalCompactor)
		var err error
		var resolve time.Duration
		if e.cfg.Idempotency.Enabled {
			// Keyed frames must stay readable while a retry can resolve them (docs/adr/0012),
			// and, where the local store's boot resolves lost commits from them, while it can
			// (docs/adr/0017).
			resolve = e.cfg.DuplicateWindow()
			if resolvesAtBoot(e) {
				resolve += resolveMargin(e)
			}
		}
		s, err = sweeper.New(sweeper.Config{Interval: e.cfg.Sweeper.Interval.D(), HistoryWindow: e.cfg.Stream.HistoryWindow.D(),
			ResolveWindow: resolve, MinHistory: 2 * e.cfg.MQ.AckWait.D(),
			DLQRetention: e.cfg.MQ.DLQRetention.D(), Instance: e.cfg.InstanceID},
			sweeper.Deps{Coord: c, Queue: queue, Dedupe: ds, DLQ: dlq, Journal: journal, Registerer: e.reg, Log: e.log.With("component", compSweeper)})
		return err
	}
	run := func(ctx context.Context) error { return s.Run(ctx) }
	return newComponent(compSweeper, start, run, nil)
}
