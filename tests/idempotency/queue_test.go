package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

// enqueued is what the embedded queue of a stopped gateway holds for one table: how many times
// each row id and each idempotency key was enqueued.
type enqueued struct {
	Rows map[string]int
	Keys map[string]int
}

// requireOnce fails t unless q holds requests distinct idempotency keys, each enqueued once, and
// the rows of requests keyed requests (ids "<prefix><i>-<j>", rowsPerKilledRequest each) once
// each.
func (q enqueued) requireOnce(t *testing.T, requests int, prefix string) {
	t.Helper()
	if len(q.Keys) != requests {
		t.Errorf("the queue holds %d distinct idempotency keys, want one per request (%d)", len(q.Keys), requests)
	}
	for k, n := range q.Keys {
		if n != 1 {
			t.Errorf("idempotency key %s enqueued %d times", k, n)
		}
	}
	wrong := 0
	for i := range requests {
		for j := range rowsPerKilledRequest {
			if id := fmt.Sprintf("%s%d-%d", prefix, i, j); q.Rows[id] != 1 {
				if wrong++; wrong <= 10 {
					t.Errorf("row %s enqueued %d times, want once", id, q.Rows[id])
				}
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d rows not enqueued exactly once", wrong, requests*rowsPerKilledRequest)
	}
}

// errReplayDone ends a replay once the retained history is read.
var errReplayDone = errors.New("replay done")

// readQueue opens the queue of g (which must be stopped: its embedded store, or its streams on
// nats-server) and reads the whole retained history of tenant "default", table. Retention keeps
// inserted records for stream.history_window (24 h by default), so this is every record ever
// enqueued for the table during a test: the proof of "never enqueued twice" independent of what
// the writer did later. It stops at the first marker row (settled enqueues it after every other
// request), so frames may hold any number of records, and fences (frames of none) are skipped.
func readQueue(t testing.TB, g *gateway, table string) enqueued {
	t.Helper()
	var q interface {
		mq.Replayer
		Start(ctx context.Context) error
		Close(ctx context.Context) error
	}
	var err error
	if g.cfg.MQ == "nats" {
		q, err = natsmq.New(natsmq.Config{URLs: []string{g.cfg.NATSURL}, Prefix: g.cfg.MQPrefix, Replicas: 1, ManageTopology: true}, natsmq.Deps{})
	} else {
		q, err = embeddedmq.New(embeddedmq.Config{Dir: filepath.Join(g.dir, "data", "mq")}, embeddedmq.Deps{})
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatalf("opening the gateway's queue: %v", err)
	}
	defer func() { _ = q.Close(context.WithoutCancel(ctx)) }()
	out := enqueued{Rows: map[string]int{}, Keys: map[string]int{}}
	records := 0
	err = q.Replay(ctx, "default", table, mq.Cursor{}, func(e mq.Event) error {
		if e.Reset != nil {
			return fmt.Errorf("history was trimmed: %+v", *e.Reset)
		}
		r := e.Record
		records++
		if r.IdempotencyKey != "" {
			out.Keys[r.IdempotencyKey]++
		}
		segs, err := payload.Decode(r.Payload)
		if err != nil {
			return err
		}
		marker := false
		for _, s := range segs {
			rows, err := s.CanonicalRows()
			if err != nil {
				return err
			}
			for _, row := range rows {
				var vals []any
				if err := json.Unmarshal(row, &vals); err != nil || len(vals) == 0 || s.Columns[0] != "id" {
					return fmt.Errorf("unexpected row %s of columns %v", row, s.Columns)
				}
				id := fmt.Sprint(vals[0])
				marker = marker || strings.HasPrefix(id, "marker-")
				out.Rows[id]++
			}
		}
		if marker {
			return errReplayDone
		}
		return nil
	})
	if !errors.Is(err, errReplayDone) {
		t.Fatalf("replaying the queue (%d records read): %v", records, err)
	}
	return out
}
