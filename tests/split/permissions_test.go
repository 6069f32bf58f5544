package split

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
)

// roleConn is a NATS connection as one role's user that records the permission violations the
// server reports to it.
type roleConn struct {
	role string
	nc   *nats.Conn
	js   jetstream.JetStream

	mu         sync.Mutex
	violations []string
}

// connectAs connects to b's NATS as role's user (its generated password file).
func connectAs(t *testing.T, b *backends, role string) *roleConn {
	t.Helper()
	pw, err := os.ReadFile(b.NATSPasswordFile(role))
	if err != nil {
		t.Fatal(err)
	}
	c := &roleConn{role: role}
	nc, err := nats.Connect(strings.Join(b.NATSURLs, ","), nats.UserInfo(splitdeploy.NATSUserPrefix+role, strings.TrimSpace(string(pw))),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.mu.Lock()
				c.violations = append(c.violations, err.Error())
				c.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// refused runs do (whose own error is expected: a refused request gets no answer) and requires
// the server to report a permission violation naming subject to this connection.
func (c *roleConn) refused(t *testing.T, what, subject string, do func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := do(ctx); err == nil {
		t.Errorf("%s %s: succeeded, want it refused", c.role, what)
		return
	}
	want := fmt.Sprintf("%q", subject)
	poll.Until(t, 10*time.Second, c.role+" "+what+": a permissions violation for "+want, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, v := range c.violations {
			if strings.Contains(v, want) {
				return true
			}
		}
		return false
	})
}

// TestNATSPermissionsRefuseWhatARoleMustNotDo runs one api, one ingest and one sweeper process,
// each as its own NATS user with the permissions `wavehouse mq permissions` generated, over a
// nats-server enforcing them; rows (also a repeated Idempotency-Key) reach ClickHouse through
// them. Then, connected as each role's user, the server refuses what that role must not do: the
// api purging a stream, pulling from the ingest consumer, dead-lettering, touching the leases or
// reading the ingest subjects; the ingest worker publishing to the ingest subjects, purging or
// touching the leases; the sweeper publishing or consuming. What each one must do still works
// on the same connections, the api process serves the dead letters, and no process log reports
// a permissions violation.
func TestNATSPermissionsRefuseWhatARoleMustNotDo(t *testing.T) {
	b := sharedBackends(t, nil, 1)
	b.Idempotency = true
	b.StartNATS(t, binaryPath)
	api := startProc(t, b, "api-1", roleAPI)
	startProc(t, b, "ingest-1", roleIngest)
	startProc(t, b, "sweeper-1", roleSweeper)
	api.sql(t, "CREATE TABLE "+splitTable+" (id String, n UInt64) ENGINE = MergeTree() ORDER BY id")
	for i, key := range []string{"k-1", "k-1", "k-2"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, api.API+"/v1/ingest/"+splitTable,
			bytes.NewReader(fmt.Appendf(nil, "{\"id\":%q,\"n\":%d}\n", key, len(key))))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Idempotency-Key", key)
		resp, err := api.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("ingest %d (Idempotency-Key %s): status %d", i, key, resp.StatusCode)
		}
	}
	// The repeat of k-1 is answered from the first request's record: two rows, not three.
	poll.Until(t, 60*time.Second, "the two distinct requests' rows in ClickHouse", func() bool { return b.serverCount(t, splitTable) == 2 })

	n := jsmq.Names{Prefix: b.Prefix, Partitions: 4}
	subject := n.Subject("default", splitTable)
	p := n.Partition("default", splitTable)
	stream, leases := n.Stream(p), n.LeaseBucket()
	purge := func(js jetstream.JetStream) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			return s.Purge(ctx)
		}
	}
	pull := func(js jetstream.JetStream) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			c, err := js.Consumer(ctx, stream, jsmq.ConsumerName)
			if err != nil {
				return err
			}
			_, err = c.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
			return err
		}
	}
	publish := func(js jetstream.JetStream, subj string) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := js.Publish(ctx, subj, []byte("{}")); return err }
	}
	putLease := func(js jetstream.JetStream) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			kv, err := js.KeyValue(ctx, leases)
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, "sweeper", []byte("stolen"))
			return err
		}
	}

	a := connectAs(t, b, roleAPI)
	a.refused(t, "purging the ingest stream", "$JS.API.STREAM.PURGE."+stream, purge(a.js))
	a.refused(t, "pulling from the ingest consumer", "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+jsmq.ConsumerName, pull(a.js))
	a.refused(t, "dead-lettering", n.DLQSubject("default", splitTable), publish(a.js, n.DLQSubject("default", splitTable)))
	a.refused(t, "writing a lease", "$KV."+leases+".sweeper", putLease(a.js))
	a.refused(t, "reading the ingest subjects", b.Prefix+".in.>", func(context.Context) error {
		sub, err := a.nc.SubscribeSync(b.Prefix + ".in.>")
		if err != nil {
			return err
		}
		if err := a.nc.Flush(); err != nil {
			return err
		}
		_, err = sub.NextMsg(500 * time.Millisecond)
		return err
	})

	i := connectAs(t, b, roleIngest)
	i.refused(t, "publishing to an ingest subject", subject, publish(i.js, subject))
	i.refused(t, "purging the ingest stream", "$JS.API.STREAM.PURGE."+stream, purge(i.js))
	i.refused(t, "writing a lease", "$KV."+leases+".sweeper", putLease(i.js))

	s := connectAs(t, b, roleSweeper)
	s.refused(t, "publishing to an ingest subject", subject, publish(s.js, subject))
	s.refused(t, "pulling from the ingest consumer", "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+jsmq.ConsumerName, pull(s.js))

	// What the roles must do, on the same connections: the api publishes (a message that is no
	// frame: the ingest process dead-letters it), the sweeper purges.
	if err := publish(a.js, subject)(t.Context()); err != nil {
		t.Fatalf("api publishing to %s: %v", subject, err)
	}
	poll.Until(t, 30*time.Second, "the ingest process to dead-letter the message that is no frame", func() bool {
		info, err := a.js.Stream(t.Context(), n.DLQStream())
		return err == nil && info.CachedInfo().State.Msgs > 0
	})
	if err := purge(s.js)(t.Context()); err != nil {
		t.Fatalf("sweeper purging %s: %v", stream, err)
	}
	// The api process serves the dead letters as its own user (a violation would fail the test
	// from its log, see splitdeploy).
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/v1/ops/dlq"}, {http.MethodGet, "/v1/ops/dlq/" + splitTable},
		{http.MethodPost, "/v1/ops/dlq/" + splitTable + "/replay"}, {http.MethodDelete, "/v1/ops/dlq/" + splitTable},
	} {
		if r, err := api.try(t.Context(), req.method, req.path, "", nil); err != nil || r.Status != http.StatusOK {
			t.Errorf("%s %s: %v %s", req.method, req.path, err, r)
		}
	}
}
