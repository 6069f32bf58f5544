package jsmq

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// errCodeNoPeers is JetStream's "no suitable peers for placement" (JSClusterNoPeersErrF); nats.go
// names no constant for it.
const errCodeNoPeers jetstream.ErrorCode = 10005

// translate maps a nats.go error to the mq sentinels, keeping the cause.
// Context errors are returned unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		desc := strings.ToLower(apiErr.Description)
		if apiErr.ErrorCode == errCodeNoPeers && strings.Contains(desc, "peer offline") {
			// "no suitable peers for placement, peer offline": a cluster whose meta leader has
			// not heard from every peer yet (just formed, or a server restarting) cannot place a
			// replicated stream or bucket for a moment; checked before "insufficient resources",
			// which the same error can list too.
			return fmt.Errorf("%w: %w", mq.ErrUnavailable, err)
		}
		if strings.Contains(desc, "maximum bytes") || strings.Contains(desc, "maximum messages") {
			// The stream's own bound (discard new), not the server's storage.
			return fmt.Errorf("%w: %w", mq.ErrStreamFull, err)
		}
		if strings.Contains(desc, "resource limits") || strings.Contains(desc, "insufficient resources") {
			return fmt.Errorf("%w: %w", mq.ErrQueueFull, err)
		}
		if apiErr.Code == 503 {
			// "JetStream system temporarily unavailable": a cluster without a meta leader.
			return fmt.Errorf("%w: %w", mq.ErrUnavailable, err)
		}
		return err
	}
	switch {
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("%w: %w", mq.ErrUnavailable, err)
	}
	return err
}

// Unavailable reports whether err (from the queue, or from a JetStream call it made) means the
// JetStream servers cannot answer right now, which a later attempt may not meet.
func Unavailable(err error) bool { return errors.Is(translate(err), mq.ErrUnavailable) }
