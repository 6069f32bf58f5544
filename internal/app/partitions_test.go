package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// runApp runs an App until the returned stop is called (or the test ends) and returns it once
// every component has started.
func runApp(t *testing.T, cfg config.Config, log *slog.Logger) (*App, func()) {
	t.Helper()
	a, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return a, runBuilt(t, a)
}

// runBuilt runs a until the returned stop is called (or the test ends) and returns once every
// component has started.
func runBuilt(t *testing.T, a *App) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	t.Cleanup(stop)
	select {
	case <-a.Started():
	case err := <-done:
		t.Fatalf("app stopped during start: %v", err)
	}
	return stop
}

// TestFewerPartitionsStrandNoRow: rows accepted with 4 partitions and not yet inserted are all
// inserted, exactly once, after a restart on the same data dir with 1 partition; the boot warns
// with the number of frames left in the partition streams beyond the count.
func TestFewerPartitionsStrandNoRow(t *testing.T) {
	cfg := testConfig(t)
	cfg.MQ.Partitions = 4
	cfg.MQ.AckWait = config.Duration(time.Second) // frames the first process held come back soon
	cfg.Ingest.Flush.MaxWait = config.Duration(time.Hour)
	// One table per partition, and one more: the rows of three of them sit in streams 1..3.
	var tables []string
	seen := map[int]bool{}
	beyond := 0
	for i := 0; len(tables) < 5; i++ {
		name := fmt.Sprintf("e%d", i)
		p := mq.PartitionOf(auth.DefaultAnonymousTenant, name, 4)
		if seen[p] && len(seen) < 4 {
			continue
		}
		seen[p] = true
		tables = append(tables, name)
		if p > 0 {
			beyond++
		}
	}
	const requests = 2

	a, stop := runApp(t, cfg, quietLog())
	base := "http://" + a.APIAddr()
	for _, tb := range tables {
		if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE `+tb+` (id UInt64) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
			t.Fatalf("create %s: %d %s", tb, r.code, r.raw)
		}
		for i := range requests {
			if r := call(t, "POST", base+"/v1/ingest/"+tb, "application/json", fmt.Sprintf(`{"id":%d}`, i)); r.code != 202 {
				t.Fatalf("ingest %s: %d %s", tb, r.code, r.raw)
			}
		}
	}
	stop() // nothing was inserted: the flush waits an hour

	cfg.MQ.Partitions = 1
	cfg.Ingest.Flush.MaxWait = config.Duration(50 * time.Millisecond)
	logs := &logbuf.Buffer{}
	a, _ = runApp(t, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	base = "http://" + a.APIAddr()
	warning := `"msg":"mq: partition streams beyond mq.partitions hold unacknowledged frames (left by a larger partition count); the ingest role drains them","partitions":1,`
	if out := logs.String(); !strings.Contains(out, warning) || !strings.Contains(out, fmt.Sprintf(`"frames":%d}`, beyond*requests)) {
		t.Fatalf("boot log lacks the warning with %d frames:\n%s", beyond*requests, out)
	}
	for _, tb := range tables {
		want := fmt.Sprintf(`"c":%d,"u":%d`, requests, requests)
		var last string
		poll.Until(t, 60*time.Second, "every row of "+tb+" inserted once", func() bool {
			last = call(t, "POST", base+"/v1/query", "application/json", `{"sql":"SELECT count() AS c, uniqExact(id) AS u FROM `+tb+`"}`).raw
			return strings.Contains(last, want)
		})
		// Exactly once: nothing more arrives later (the drain ended with the partition empty).
		if !strings.Contains(last, want) {
			t.Fatalf("table %s: %s, want %s", tb, last, want)
		}
	}
	poll.Until(t, 20*time.Second, "three drained partitions logged", func() bool { return strings.Count(logs.String(), "partition beyond mq.partitions drained") == 3 })
	for _, tb := range tables {
		if r := call(t, "POST", base+"/v1/query", "application/json", `{"sql":"SELECT count() AS c FROM `+tb+`"}`); !strings.Contains(r.raw, fmt.Sprintf(`"c":%d`, requests)) {
			t.Fatalf("table %s after the drain: %s", tb, r.raw)
		}
	}
}
