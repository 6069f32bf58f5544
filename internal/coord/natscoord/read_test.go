package natscoord

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestAPIPrefix(t *testing.T) {
	for _, tc := range []struct {
		opts jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{}, "$JS.API."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.acc.API"}, "$JS.acc.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.acc.API."}, "$JS.acc.API."},
	} {
		if got := apiPrefix(tc.opts); got != tc.want {
			t.Errorf("apiPrefix(%+v) = %q, want %q", tc.opts, got, tc.want)
		}
	}
}
