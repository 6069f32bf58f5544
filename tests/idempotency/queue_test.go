package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// enqueued is what the embedded queue of a stopped gateway holds for one table: how many times
// each row id and each idempotency key was enqueued.
type enqueued struct {
	Rows map[string]int
	Keys map[string]int
}

// errReplayDone ends a replay once the retained history is read.
var errReplayDone = errors.New("replay done")

// readQueue opens the embedded queue store of g (which must be stopped) and reads the whole
// retained history of tenant "default", table. Retention keeps inserted records for
// stream.history_window (24 h by default), so this is every record ever enqueued for the table
// during a test: the proof of "never enqueued twice" independent of what the writer did later.
// It stops after the last retained frame's first record, so every frame must carry one record:
// true for keyed records (a frame each) and for the lone marker of settled.
func readQueue(t testing.TB, g *gateway, table string) enqueued {
	t.Helper()
	q, err := embeddedmq.New(embeddedmq.Config{Dir: filepath.Join(g.dir, "data", "mq")}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatalf("opening the gateway's queue store: %v", err)
	}
	defer func() { _ = q.Close(context.WithoutCancel(ctx)) }()
	st, err := q.Stats(ctx, "default", table)
	if err != nil {
		t.Fatalf("queue stats: %v", err)
	}
	out := enqueued{Rows: map[string]int{}, Keys: map[string]int{}}
	frames := map[uint64]bool{}
	err = q.Replay(ctx, "default", table, mq.Cursor{}, func(e mq.Event) error {
		if e.Reset != nil {
			return fmt.Errorf("history was trimmed: %+v", *e.Reset)
		}
		r := e.Record
		if r.IdempotencyKey != "" {
			out.Keys[r.IdempotencyKey]++
		}
		segs, err := payload.Decode(r.Payload)
		if err != nil {
			return err
		}
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
				out.Rows[fmt.Sprint(vals[0])]++
			}
		}
		frames[r.Position.Seq] = true
		if uint64(len(frames)) >= st.Retained {
			return errReplayDone
		}
		return nil
	})
	if !errors.Is(err, errReplayDone) {
		t.Fatalf("replaying the queue (%d frames retained, %d read): %v", st.Retained, len(frames), err)
	}
	return out
}
