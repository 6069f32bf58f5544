package jsmq

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// TestTranslatePlacement: a placement refused because a peer is not known to be online yet is
// unavailable (natsmq's boot retries it, a cluster that just formed reaches it in CI), while
// one refused for resources stays queue full, and other placement refusals stay as they are. A
// stream's own bound reached is a full stream, a queue full that is no tenant budget.
func TestTranslatePlacement(t *testing.T) {
	api := func(desc string) error {
		return fmt.Errorf("create key-value bucket b: %w",
			&jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: desc})
	}
	cases := []struct {
		err        error
		unavail    bool
		queueFull  bool
		streamFull bool
	}{
		{api("no suitable peers for placement, peer offline"), true, false, false},
		{api("no suitable peers for placement, peer offline, insufficient resources"), true, false, false},
		{api("no suitable peers for placement, insufficient resources"), false, true, false},
		{api("no suitable peers for placement, tags not matched ['az:1']"), false, false, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10003, Description: "bad request: peer offline"}, false, false, false},
		{&jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum bytes exceeded"}, false, true, true},
	}
	for _, c := range cases {
		got := translate(c.err)
		if errors.Is(got, mq.ErrStreamFull) != c.streamFull || errors.Is(got, mq.ErrTenantBudget) {
			t.Errorf("translate(%v) = %v: stream full %v, want %v, and never a tenant budget", c.err, got, errors.Is(got, mq.ErrStreamFull), c.streamFull)
		}
		if errors.Is(got, mq.ErrUnavailable) != c.unavail || errors.Is(got, mq.ErrQueueFull) != c.queueFull {
			t.Errorf("translate(%v) = %v: unavailable %v, queue full %v; want %v, %v",
				c.err, got, errors.Is(got, mq.ErrUnavailable), errors.Is(got, mq.ErrQueueFull), c.unavail, c.queueFull)
		}
		var apiErr *jetstream.APIError
		if !errors.As(got, &apiErr) {
			t.Errorf("translate(%v) = %v lost the API error", c.err, got)
		}
	}
}
