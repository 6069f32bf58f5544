package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
)

// buildCoord creates the selected lease coordinator. The nats backend keeps its leases on the
// mq.nats connection, so it is created when the queue (which starts first) is up.
func (a *App) buildCoord() (Component, error) {
	c := a.cfg.Coord
	switch c.Backend {
	case "local":
		lc, err := localcoord.New(localcoord.Config{Lease: c.Lease.D()}, localcoord.Deps{Instance: a.cfg.InstanceID})
		if err != nil {
			return nil, err
		}
		a.coord = lc
		return newComponent(compCoord, nil, nil, lc.Close), nil
	case "nats":
		var nc *natscoord.Coordinator
		start := func(ctx context.Context) error {
			if a.natsQueue == nil {
				return errors.New("coord.backend nats needs mq.backend nats")
			}
			jq, err := a.natsQueue.Queue()
			if err != nil {
				return err
			}
			nc, err = natscoord.New(natscoord.Config{
				Bucket: c.NATS.Bucket, Manage: a.cfg.MQ.NATS.ManageTopology, Replicas: a.cfg.MQ.NATS.Replicas, Lease: c.Lease.D(),
			}, natscoord.Deps{JetStream: jq.JetStream(), Instance: a.cfg.InstanceID, Logger: a.log})
			if err != nil {
				return err
			}
			a.coord = nc
			return nc.Init(ctx)
		}
		stop := func(ctx context.Context) error {
			if nc == nil {
				return nil
			}
			return nc.Close(ctx)
		}
		return newComponent(compCoord, start, nil, stop), nil
	}
	return nil, fmt.Errorf("coord.backend %q is not built in", c.Backend)
}
