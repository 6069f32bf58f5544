package embeddedmq_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
)

// crashEnv names the store directory of a crash-test child process, crashSyncEnv its sync mode.
const (
	crashEnv     = "WH_MQ_CRASH_CHILD_DIR"
	crashSyncEnv = "WH_MQ_CRASH_CHILD_SYNC"
)

var crashTables = []string{"a", "b.c", "d e", "f"}

func crashConfig(dir, sync string) embeddedmq.Config {
	return embeddedmq.Config{Dir: dir, Sync: sync, Partitions: 2, TenantMaxBytes: -1}
}

// crashChild, in a child process started by TestCrashSIGKILL, publishes
// from 16 goroutines until it is killed, printing "position payload" for
// every publish that returned success. It reports whether it ran.
func crashChild(*testing.M) bool {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		return false
	}
	q, err := embeddedmq.New(crashConfig(dir, os.Getenv(crashSyncEnv)), embeddedmq.Deps{})
	if err == nil {
		err = q.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				var raw [12]byte
				_, _ = rand.Read(raw[:])
				payload := fmt.Sprintf("w%d-%d-%s", w, i, hex.EncodeToString(raw[:]))
				table := crashTables[(w+i)%len(crashTables)]
				res, err := q.Publish(context.Background(), mq.Record{Tenant: "crash", Table: table, Payload: []byte(payload)})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child publish:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %s %s\n", res.Position, hex.EncodeToString([]byte(table)), payload)
				_ = out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return true
}

// TestCrashSIGKILL kills a publishing child process with SIGKILL ten times
// mid-stream on one store directory, then reopens the store and checks that
// every publish that returned success is present with identical content. It
// runs under sync: always and under sync: none, whose page-cache-only writes
// survive a process crash too (only a power loss or kernel crash can lose them).
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, sync := range []string{embeddedmq.SyncAlways, embeddedmq.SyncNone} {
		t.Run(sync, func(t *testing.T) { crashSIGKILL(t, sync) })
	}
}

func crashSIGKILL(t *testing.T, sync string) {
	dir := t.TempDir()
	acked := map[string]string{} // table + " " + position -> payload
	const rounds = 10
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashSyncEnv+"="+sync)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		killAfter := 300 + r*97 // vary the kill point
		lines := 0
		killed := false
		for sc.Scan() {
			line := sc.Text()
			fields := strings.SplitN(line, " ", 3)
			if len(fields) != 3 {
				continue // a torn last line cannot have been printed whole
			}
			pos, err := mq.ParsePosition(fields[0])
			if err != nil {
				t.Fatalf("child line %q: %v", line, err)
			}
			table, _ := hex.DecodeString(fields[1])
			acked[string(table)+" "+pos.String()] = fields[2]
			lines++
			if lines == killAfter && !killed {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child exited after %d acks before the kill: %s", r, lines, stderr.String())
		}
	}

	q := open(t, crashConfig(dir, sync))
	got := map[string]string{}
	// An empty fetch only means nothing arrived within the wait; the store is read completely
	// when no table has a frame above the ack floor any more.
	pending := func() uint64 {
		var n uint64
		for _, table := range crashTables {
			st, err := q.Stats(t.Context(), "crash", table)
			if err != nil {
				t.Fatal(err)
			}
			n += st.Pending
		}
		return n
	}
	deadline := time.Now().Add(2 * time.Minute)
	for p := 0; p < q.Partitions(); p++ {
		s, err := q.Subscribe(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ds, err := s.Fetch(t.Context(), 1000, 500*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				for _, r := range d.Records() {
					got[r.Table+" "+r.Position.String()] = string(r.Payload)
				}
				if err := d.Ack(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if len(ds) == 0 {
				break
			}
		}
		_ = s.Close()
		if p == q.Partitions()-1 && pending() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d frames still unread after 2 minutes", pending())
			}
			p = -1 // read every partition again
		}
	}
	missing := 0
	for pos, want := range acked {
		if g, ok := got[pos]; !ok || g != want {
			if missing < 5 {
				t.Errorf("acknowledged record %s: stored %q, want %q", pos, g, want)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged records lost or changed after %d SIGKILLs", missing, len(acked), rounds)
	}
	t.Logf("%d acknowledged records (%d stored) survived %d SIGKILLs", len(acked), len(got), rounds)
}
