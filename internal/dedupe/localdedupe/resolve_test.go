package localdedupe

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
)

func openResolving(t *testing.T, fs vfs.FS, clock dedupe.Clock) *Store {
	t.Helper()
	// A background sync an hour apart: only the writes the test syncs survive the crash.
	s, err := New(Config{Dir: "/dedupe", ResolveFromQueue: true, SyncInterval: time.Hour}, Deps{Clock: clock, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// TestResolveMarksRecoversLostCommits: with commits resolved from the queue, a crash loses the
// commits that were not yet synced; the claims are left as their fsynced marks wrote them.
// ResolveMarks asks the queue about exactly those (not about a commit that survived, nor about a
// mark older than the last sync by more than the margin, nor about a mark another request took
// over), records a claim whose frame the queue
// stored as resolved, and a retry long after the duplicate window then inherits the resolved
// frame instead of a lapsed mark, while another request reusing the key is refused. A claim the
// queue cannot tell about stays a mark, as before.
func TestResolveMarksRecoversLostCommits(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewCrashableMem()
	clock := dedupetest.NewClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	s := openResolving(t, fs, clock)
	key := func(id string) dedupe.Key { return dedupe.Key{Tenant: "acme", Table: "events", ID: id} }
	claim := func(id string) string {
		res, err := s.Reserve(ctx, key(id), "fp-"+id, 2*time.Second)
		if err != nil || res.Outcome != dedupe.OutcomeClaimed {
			t.Fatalf("Reserve %s: %+v, %v", id, res, err)
		}
		return res.Claim.Token
	}
	tok := map[string]string{}
	// A claim marked long before the last sync: no commit lost in the crash can be its own.
	tok["old"] = claim("old")
	if errs := s.Mark(ctx, "frame-O", clock.Now().Add(2*time.Minute), []dedupe.Owned{{Key: key("old"), Token: tok["old"]}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	clock.Advance(10 * time.Minute)
	if err := s.syncNow(); err != nil {
		t.Fatal(err)
	}
	until := clock.Now().Add(2 * time.Minute)
	for _, id := range []string{"lost", "unknown", "kept"} {
		tok[id] = claim(id)
	}
	owned := func(ids ...string) []dedupe.Owned {
		var o []dedupe.Owned
		for _, id := range ids {
			o = append(o, dedupe.Owned{Key: key(id), Token: tok[id]})
		}
		return o
	}
	if errs := s.Mark(ctx, "frame-A", until, owned("lost", "unknown", "kept")); slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("Mark: %v", errs)
	}
	resp := dedupe.Response{Status: 202, Body: []byte(`{"sequence":"7-0"}`)}
	if err := s.Commit(ctx, key("kept"), tok["kept"], resp, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	// A later frame's fsynced marks make the commit before them durable.
	tok["later"] = claim("later")
	if errs := s.Mark(ctx, "frame-B", until, owned("later")); errs[0] != nil {
		t.Fatal(errs[0])
	}
	// A marked claim released (keeping its mark), then taken over by another request reusing
	// the key, which released too: the record is that request's now, not the marked one's.
	tok["taken"] = claim("taken")
	if errs := s.Mark(ctx, "frame-B", until, owned("taken")); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := s.Release(ctx, key("taken"), tok["taken"]); err != nil {
		t.Fatal(err)
	}
	other, err := s.Reserve(ctx, key("taken"), "fp-reuse", 2*time.Second)
	if err != nil || other.Outcome != dedupe.OutcomeClaimed || other.Claim.Frame != "frame-B" {
		t.Fatalf("Reserve over the released mark: %+v, %v", other, err)
	}
	if err := s.Release(ctx, key("taken"), other.Claim.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.syncNow(); err != nil { // the releases are not fsynced on their own
		t.Fatal(err)
	}

	if err := s.Commit(ctx, key("lost"), tok["lost"], resp, 24*time.Hour); err != nil {
		t.Fatal(err)
	}

	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // only what was synced
	after := openResolving(t, crashed, clock)
	var asked []Unresolved
	resolve := func(_ context.Context, claims []Unresolved) ([]string, error) {
		asked = append(asked, claims...)
		out := make([]string, len(claims))
		for i, c := range claims {
			if c.QueueKey == dedupe.QueueKey(key("lost"), "fp-lost") {
				out[i] = c.Frame + "@7-0"
			}
		}
		return out, nil
	}
	n, err := after.ResolveMarks(ctx, resolve, func(string) time.Duration { return 24 * time.Hour })
	if err != nil || n != 1 {
		t.Fatalf("ResolveMarks = %d, %v; want 1 resolved", n, err)
	}
	var askedFor []string
	for _, c := range asked {
		askedFor = append(askedFor, c.Frame+" "+c.QueueKey)
	}
	slices.Sort(askedFor)
	wantAsked := []string{
		"frame-A " + dedupe.QueueKey(key("lost"), "fp-lost"),
		"frame-A " + dedupe.QueueKey(key("unknown"), "fp-unknown"),
		"frame-B " + dedupe.QueueKey(key("later"), "fp-later"),
	}
	slices.Sort(wantAsked)
	if !slices.Equal(askedFor, wantAsked) {
		t.Fatalf("asked the queue about %q, want %q (the marked claims without a durable commit)", askedFor, wantAsked)
	}

	// Long after the duplicate window, where a mark alone can no longer be resolved.
	clock.Advance(time.Hour)
	res, err := after.Reserve(ctx, key("lost"), "fp-other", time.Second)
	if err != nil || res.Outcome != dedupe.OutcomeMismatch {
		t.Fatalf("another request reusing the resolved key: %+v, %v; want a mismatch, as its commit would answer", res, err)
	}
	res, err = after.Reserve(ctx, key("lost"), "fp-lost", time.Second)
	if err != nil || res.Outcome != dedupe.OutcomeClaimed || res.MarkLapsed || res.Claim.Frame != "frame-A@7-0" {
		t.Fatalf("retry of the lost commit: %+v, %v; want a claim inheriting frame-A@7-0", res, err)
	}
	res, err = after.Reserve(ctx, key("unknown"), "fp-unknown", time.Second)
	if err != nil || res.Outcome != dedupe.OutcomeClaimed || !res.MarkLapsed {
		t.Fatalf("retry of the claim the queue could not tell about: %+v, %v; want its mark lapsed", res, err)
	}
	res, err = after.Reserve(ctx, key("kept"), "fp-kept", time.Second)
	if err != nil || res.Outcome != dedupe.OutcomeDuplicate || !res.Record.Response.Equal(resp) {
		t.Fatalf("retry of the durable commit: %+v, %v; want its recorded response", res, err)
	}
}
