package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/stream"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestResumeNeverJumpsSilently is the property behind docs/stream.md's "never a silent jump":
// across random ingest, random disconnect points, partition-count changes, restarts on the
// same storage and restarts on new storage, every client that resumes with its Last-Event-ID
// sees each row of its table exactly once and in order, or first gets an `event: reset` that
// names its id and where delivery restarts. A reset is required exactly when the partition
// layout or the storage changed since the client's last event (or its id has no epoch), and
// allowed at no other time. WH_TEST_SEED replays a logged seed.
func TestResumeNeverJumpsSilently(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { checkNoSilentJump(t, &embeddedEnv{}) })
	t.Run("nats", func(t *testing.T) {
		nt := testsvc.NATSServer(t)
		checkNoSilentJump(t, &natsEnv{url: nt.URL, prefix: testsvc.UniqueName(t, "jump")})
	})
}

// jumpQueue is a started queue the property test publishes to and streams from.
type jumpQueue interface {
	testQueue
	mq.Replayer
	Close(ctx context.Context) error
}

// jumpEnv opens a queue with n partitions, on the storage of the previous open or (fresh) on
// new storage.
type jumpEnv interface {
	open(t *testing.T, n int, fresh bool) jumpQueue
}

type embeddedEnv struct{ dir string }

func (e *embeddedEnv) open(t *testing.T, n int, fresh bool) jumpQueue {
	if fresh || e.dir == "" {
		e.dir = t.TempDir()
	}
	q, err := embeddedmq.New(embeddedmq.Config{Dir: e.dir, Partitions: n, TenantMaxBytes: -1, Sync: embeddedmq.SyncInterval}, embeddedmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return q
}

// natsEnv is one prefix on an external nats-server; new storage is the partition streams
// deleted (they are recreated by the next open).
type natsEnv struct{ url, prefix string }

func (e *natsEnv) open(t *testing.T, n int, fresh bool) jumpQueue {
	if fresh {
		nc, err := nats.Connect(e.url)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		for p := range maxJumpPartitions {
			if err := js.DeleteStream(t.Context(), fmt.Sprintf("%s_in_%d", e.prefix, p)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("delete stream: %v", err)
			}
		}
		nc.Close()
	}
	q, err := natsmq.New(natsmq.Config{URLs: []string{e.url}, ManageTopology: true, Replicas: 1, Prefix: e.prefix, Partitions: n,
		PublishTimeout: 5 * time.Second}, natsmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return q
}

const maxJumpPartitions = 4

// jumpRec is one published record: its position and rendered rows.
type jumpRec struct {
	pos  mq.Position
	data string
}

// jumpClient is one EventSource-like client of one table.
type jumpClient struct {
	table string
	// id is the last event id received ("" before the first connection); gen is the layout
	// generation it was received in.
	id  string
	pos mq.Position
	gen int
}

// jumpModel is the test's own account of what was published where.
type jumpModel struct {
	rng *rand.Rand
	q   jumpQueue
	s   *server
	n   int
	// storage counts fresh starts; gen counts layout changes (partition count or storage).
	storage, gen int
	// truth holds each stream's records of each table in position order, keyed by
	// "storage/partition/table".
	truth map[string][]jumpRec
	uid   int
}

func (m *jumpModel) key(table string) string {
	return fmt.Sprintf("%d/%d/%s", m.storage, mq.PartitionOf(tenant, table, m.n), table)
}

// publish stores k records of table concurrently (so frames may carry several) and records
// them in position order.
func (m *jumpModel) publish(t *testing.T, table string, k int) {
	recs := make([]jumpRec, k)
	var wg sync.WaitGroup
	errs := make(chan error, k)
	for i := range recs {
		m.uid++
		uid := m.uid
		wg.Go(func() {
			res, err := m.q.Publish(context.Background(), mq.Record{Tenant: tenant, Table: table,
				Payload: encode(t, []string{"id", "name"}, []any{uid, table})})
			if err != nil {
				errs <- err
				return
			}
			recs[i] = jumpRec{pos: res.Position, data: "[" + rowData(uid, table) + "]"}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("publish: %v", err)
	}
	slices.SortFunc(recs, func(a, b jumpRec) int {
		if a.pos.Less(b.pos) {
			return -1
		}
		return 1
	})
	m.truth[m.key(table)] = append(m.truth[m.key(table)], recs...)
}

// visit connects c with its last id, reads a random number of the events it is owed and
// disconnects, failing on any event the model does not predict.
func (m *jumpModel) visit(t *testing.T, c *jumpClient) {
	all := m.truth[m.key(c.table)]
	epoch, err := m.q.Epoch(t.Context(), tenant, c.table)
	if err != nil {
		t.Fatal(err)
	}
	query, hdr, sent := "since=0", map[string]string(nil), ""
	wantReset := false
	exp := all
	if c.id != "" {
		sent = c.id
		if m.rng.IntN(5) == 0 {
			sent = c.pos.String() // the id form of releases before epochs
		}
		hdr = map[string]string{"Last-Event-ID": sent}
		wantReset = sent != c.id || c.gen != m.gen
		if !wantReset {
			i := 0
			for i < len(all) && !c.pos.Less(all[i].pos) {
				i++
			}
			exp = all[i:]
		}
	}
	n := m.rng.IntN(len(exp) + 1)
	if n == 0 && !wantReset {
		return
	}
	conn := dial(t, streamURL(m.s, c.table, query), hdr)
	defer conn.Close()
	if wantReset {
		ev := conn.next(t)
		restart := epoch + "-0-4294967295" // nothing is trimmed: delivery restarts at the first record
		want := fmt.Sprintf(`{"after":"%s","first":"%s-1-0","reason":"epoch","requested":"%s"}`, restart, epoch, sent)
		if ev.Type != "reset" || ev.ID != restart || ev.Data != want {
			t.Fatalf("table %s resumed with %s after a layout change: got %q id %s data %s, want reset id %s data %s",
				c.table, sent, ev.Type, ev.ID, ev.Data, restart, want)
		}
		c.id, c.pos, c.gen = ev.ID, mq.Position{Index: ^uint32(0)}, m.gen
	}
	for i := range n {
		ev := conn.next(t)
		wantID := epoch + "-" + exp[i].pos.String()
		if ev.Type != "rows" || ev.ID != wantID || ev.Data != exp[i].data {
			t.Fatalf("table %s resumed with %q: event %d is %q id %s data %s, want rows id %s data %s (a silent jump)",
				c.table, sent, i, ev.Type, ev.ID, ev.Data, wantID, exp[i].data)
		}
		c.id, c.pos, c.gen = ev.ID, exp[i].pos, m.gen
	}
}

func checkNoSilentJump(t *testing.T, env jumpEnv) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WH_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WH_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with WH_TEST_SEED=%d)", seed, seed)
	m := &jumpModel{rng: rand.New(rand.NewPCG(seed, 2)), truth: map[string][]jumpRec{}}
	tables := []string{"a", "b", "c"}
	var clients []*jumpClient
	for _, tb := range tables {
		clients = append(clients, &jumpClient{table: tb}, &jumpClient{table: tb})
	}
	m.n = 1 + m.rng.IntN(maxJumpPartitions)
	fresh := true
	resets := 0
	for phase := range 8 {
		m.q = env.open(t, m.n, fresh)
		m.s = newServer(t, m.q, stream.Config{})
		for range 4 {
			m.publish(t, tables[m.rng.IntN(len(tables))], 1+m.rng.IntN(4))
			for range 2 {
				c := clients[m.rng.IntN(len(clients))]
				gen := c.gen
				had := c.id != ""
				m.visit(t, c)
				if had && c.gen != gen {
					resets++
				}
			}
		}
		if err := m.s.svc.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m.q.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The next phase: a restart on the same storage, with the same or another partition
		// count, or a start on new storage.
		next, change := m.n, "restart"
		switch m.rng.IntN(3) {
		case 0:
		case 1:
			next = 1 + (m.n+m.rng.IntN(maxJumpPartitions-1))%maxJumpPartitions
			change = "partitions"
		case 2:
			next = 1 + m.rng.IntN(maxJumpPartitions)
			change = "new storage"
		}
		fresh = change == "new storage"
		if fresh {
			m.storage++
		}
		if next != m.n || fresh {
			m.gen++
		}
		t.Logf("phase %d: %d partitions; next: %s, %d partitions", phase, m.n, change, next)
		m.n = next
	}
	t.Logf("%d records published, %d resumes across a layout change", m.uid, resets)
}

// TestResumeResetsWhenPartitionCountReturns: an id read under 4 partitions gets a reset after the
// count went to 1 and back to 4 on the same directory, although its stream, sequence and count
// are the same again: the rows accepted meanwhile are in another stream.
func TestResumeResetsWhenPartitionCountReturns(t *testing.T) {
	table := "moves"
	for i := 0; mq.PartitionOf(tenant, table, maxJumpPartitions) == 0; i++ {
		table = "moves" + strconv.Itoa(i)
	}
	env := &embeddedEnv{}
	run := func(n int, fresh bool, f func(q jumpQueue, s *server)) {
		q := env.open(t, n, fresh)
		s := newServer(t, q, stream.Config{})
		f(q, s)
		if err := s.svc.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var id string
	run(maxJumpPartitions, true, func(q jumpQueue, s *server) {
		publish(t, q, table, []any{1, "four"})
		c := dial(t, streamURL(s, table, "since=0"), nil)
		id = c.nextRows(t).ID
		c.Close()
	})
	run(1, false, func(q jumpQueue, _ *server) { publish(t, q, table, []any{2, "one"}) })
	run(maxJumpPartitions, false, func(q jumpQueue, s *server) {
		publish(t, q, table, []any{3, "four again"})
		c := dial(t, streamURL(s, table, ""), map[string]string{"Last-Event-ID": id})
		if ev := c.next(t); ev.Type != "reset" || !strings.Contains(ev.Data, `"reason":"epoch"`) {
			t.Fatalf("resume with %s after 4 → 1 → 4 partitions: got %q %s, want a reset (epoch)", id, ev.Type, ev.Data)
		}
	})
}
