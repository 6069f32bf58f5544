package app

import (
	"context"
	"errors"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/sweeper"
)

// buildSweeper creates the sweeper role. The coordinator of the nats backend only exists once
// the queue is up, so the sweeper is built when its component starts.
func (a *App) buildSweeper() (Component, error) {
	var s *sweeper.Sweeper
	start := func(context.Context) error {
		if a.coord == nil {
			return errors.New("sweeper: no coordinator")
		}
		ds, _ := a.dedupe.(dedupe.Sweeper)
		var err error
		dlq, _ := a.queue.DLQ().(mq.DeadLetterExpirer)
		journal, _ := a.queue.(mq.JournalCompactor)
		s, err = sweeper.New(sweeper.Config{Interval: a.cfg.Sweeper.Interval.D(), HistoryWindow: a.cfg.Stream.HistoryWindow.D(),
			DLQRetention: a.cfg.MQ.DLQRetention.D(), Instance: a.cfg.InstanceID},
			sweeper.Deps{Coord: a.coord, Queue: a.queue, Dedupe: ds, DLQ: dlq, Journal: journal, Registerer: a.reg, Log: a.log.With("component", compSweeper)})
		return err
	}
	run := func(ctx context.Context) error { return s.Run(ctx) }
	return newComponent(compSweeper, start, run, nil), nil
}
