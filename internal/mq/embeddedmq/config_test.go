package embeddedmq_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	err := embeddedmq.Config{Sync: "sometimes", Partitions: -1, MaxFrameRecords: -1, Prefix: "a b"}.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"mq.embedded.dir", "mq.embedded.sync", "partitions", "MaxFrameRecords", "prefix"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("validation error does not mention %q:\n%v", want, err)
		}
	}
	if err := (embeddedmq.Config{Dir: t.TempDir()}).Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
}

func TestUnstartedAndReopened(t *testing.T) {
	dir := t.TempDir()
	q, err := embeddedmq.New(embeddedmq.Config{Dir: dir}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rec := mq.Record{Tenant: "t", Table: "x", Payload: []byte("kept")}
	if _, err := q.Publish(t.Context(), rec); !errors.Is(err, mq.ErrUnavailable) {
		t.Fatalf("publish before Start: %v, want mq.ErrUnavailable", err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := q.Publish(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); !errors.Is(err, mq.ErrClosed) {
		t.Fatalf("start after close: %v, want mq.ErrClosed", err)
	}
	// A new queue on the same directory finds the record (graceful restart).
	q2 := open(t, embeddedmq.Config{Dir: dir})
	var got []mq.Record
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = q2.Replay(ctx, "t", "x", mq.Cursor{}, func(e mq.Event) error {
		got = append(got, *e.Record)
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(got) != 1 || string(got[0].Payload) != "kept" || got[0].Position != res.Position {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

// TestEverySyncModeStarts: each documented mq.embedded.sync value validates, starts and
// keeps a published record across a reopen.
func TestEverySyncModeStarts(t *testing.T) {
	for _, sync := range []string{embeddedmq.SyncAlways, embeddedmq.SyncInterval, embeddedmq.SyncNone} {
		t.Run(sync, func(t *testing.T) {
			dir := t.TempDir()
			cfg := embeddedmq.Config{Dir: dir, Sync: sync}
			q := open(t, cfg)
			res, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte(sync)})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			st, err := open(t, cfg).Stats(t.Context(), "t", "x")
			if err != nil || st.Pending != 1 {
				t.Fatalf("after reopen: %+v, %v (published at %s)", st, err, res.Position)
			}
		})
	}
}
