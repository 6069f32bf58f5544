package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"github.com/wavehouse/wavehouse/internal/coord/natscoord"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

// coordRef is the lease coordinator once its component started: the nats backend keeps its
// leases on the queue's connection, which exists only when the queue (started first) is up.
type coordRef struct{ c coord.Coordinator }

// get returns the coordinator; it is nil until the coord component started.
func (r *coordRef) get() coord.Coordinator {
	if r == nil {
		return nil
	}
	return r.c
}

// buildCoord creates the selected lease coordinator.
func buildCoord(e env, queue mq.Queue) (*coordRef, Component, error) {
	c := e.cfg.Coord
	ref := &coordRef{}
	switch c.Backend {
	case "local":
		lc, err := localcoord.New(localcoord.Config{Lease: c.Lease.D()}, localcoord.Deps{Instance: e.cfg.InstanceID})
		if err != nil {
			return nil, nil, err
		}
		ref.c = lc
		return ref, newComponent(compCoord, nil, nil, lc.Close), nil
	case "nats":
		var nc *natscoord.Coordinator
		start := func(ctx context.Context) error {
			nq, ok := queue.(*natsmq.Queue)
			if !ok {
				return errors.New("coord.backend nats needs mq.backend nats")
			}
			jq, err := nq.Queue()
			if err != nil {
				return err
			}
			nc, err = natscoord.New(natscoord.Config{
				Bucket: c.NATS.Bucket, Manage: e.cfg.MQ.NATS.ManageTopology, Replicas: e.cfg.MQ.NATS.Replicas, Lease: c.Lease.D(),
			}, natscoord.Deps{JetStream: jq.JetStream(), Instance: e.cfg.InstanceID, Logger: e.log})
			if err != nil {
				return err
			}
			ref.c = nc
			return nc.Init(ctx)
		}
		stop := func(ctx context.Context) error {
			if nc == nil {
				return nil
			}
			return nc.Close(ctx)
		}
		return ref, newComponent(compCoord, start, nil, stop), nil
	}
	return nil, nil, fmt.Errorf("coord.backend %q is not built in", c.Backend)
}
