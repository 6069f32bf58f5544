package localdedupe_test

import (
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness serves every Open from one Store over one directory, because Pebble locks its
// directory to a single open handle; after that store is closed, Open reopens the directory.
type harness struct {
	dir   string
	clock dedupe.Clock
	cur   *localdedupe.Store
	// resolving opens the store with Config.ResolveFromQueue.
	resolving bool
}

func (h *harness) Open(t *testing.T) dedupe.Store {
	t.Helper()
	if h.cur != nil {
		_, err := h.cur.Get(t.Context(), dedupe.Key{Tenant: "probe", Table: "probe", ID: "probe"})
		if !errors.Is(err, dedupe.ErrClosed) {
			return h.cur
		}
	}
	s, err := localdedupe.New(localdedupe.Config{Dir: h.dir, ResolveFromQueue: h.resolving}, localdedupe.Deps{Clock: h.clock})
	if err != nil {
		t.Fatalf("localdedupe.New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(t.Context()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	h.cur = s
	return s
}

func (h *harness) StopBackend(t *testing.T) {
	t.Fatalf("the local backend has no separate server to stop")
}

func TestConformance(t *testing.T) {
	for _, resolving := range []bool{false, true} {
		t.Run(map[bool]string{false: "commits fsynced", true: "commits resolved from the queue"}[resolving], func(t *testing.T) {
			dedupetest.Run(t, func(t *testing.T, clock dedupe.Clock, _ dedupetest.HarnessOptions) dedupetest.Harness {
				return &harness{dir: filepath.Join(t.TempDir(), "dedupe"), clock: clock, resolving: resolving}
			}, dedupetest.Caps{Sweeper: true})
		})
	}
}
