package localcoord_test

import (
	"context"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/coord"
	"github.com/wavehouse/wavehouse/internal/coord/coordtest"
	"github.com/wavehouse/wavehouse/internal/coord/localcoord"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	coordtest.Run(t, func(t *testing.T) *coordtest.Harness {
		clock := coordtest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		table := localcoord.NewTable()
		const lease = 10 * time.Second
		return &coordtest.Harness{
			New: func(t *testing.T, instance string) coord.Coordinator {
				c, err := localcoord.New(localcoord.Config{Lease: lease}, localcoord.Deps{Table: table, Clock: clock, Instance: instance})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				t.Cleanup(func() { _ = c.Close(context.Background()) })
				return c
			},
			Kill:  func(t *testing.T, c coord.Coordinator) { c.(*localcoord.Coordinator).Abandon() },
			Lease: lease,
			Clock: clock,
		}
	}, coordtest.Caps{ManualClock: true})
}
