package natscoord

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// resendPause paces the attempts of a write that no stream server received.
const resendPause = 50 * time.Millisecond

// write sends one KV write (op: a Create, Update or Delete) and sends it again for as long as
// JetStream answers that no server holds the bucket's stream for its subject
// (jetstream.ErrNoStreamResponse, after the client's own two quick retries). An R3 bucket has
// such moments in normal operation: while its stream elects a leader (seconds, after the leader
// was lost), and right after it was created, until the leader's subscription has reached the
// server this connection uses. That answer means the write reached no stream server, so sending
// it again cannot apply it twice and every compare-and-set keeps its meaning. Every other
// outcome, including a timeout (the write may have landed), is returned as it is.
//
// The attempts end with ctx, and after one Lease when ctx has no deadline: a leaderless bucket
// for that long has let every lease in it lapse anyway. sent is when the attempt that got the
// returned answer was sent, the moment the step-down timing counts from (see docs/coord.md);
// attempts before it reached no server.
func (c *Coordinator) write(ctx context.Context, op func(context.Context) (uint64, error)) (rev uint64, sent time.Time, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Lease)
		defer cancel()
	}
	for {
		sent = c.clock.Now()
		rev, err = op(ctx)
		if !errors.Is(err, jetstream.ErrNoStreamResponse) || ctx.Err() != nil {
			return rev, sent, err
		}
		pause := time.NewTimer(resendPause)
		select {
		case <-ctx.Done():
			pause.Stop()
			return rev, sent, err
		case <-pause.C:
		}
	}
}

// del is write for a Delete, which has no revision to return.
func (c *Coordinator) del(ctx context.Context, kv jetstream.KeyValue, name string, opts ...jetstream.KVDeleteOpt) error {
	_, _, err := c.write(ctx, func(ctx context.Context) (uint64, error) {
		return 0, kv.Delete(ctx, name, opts...)
	})
	return err
}
