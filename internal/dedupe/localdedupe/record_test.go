package localdedupe

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

const hexFP = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestRecordLayoutRoundTrips: every field survives the binary layout, with a hex SHA-256
// fingerprint packed into 32 bytes and any other fingerprint (upper-case hex, another length,
// empty) kept as it is; a truncated or unknown value is an error, never a guess.
func TestRecordLayoutRoundTrips(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).UnixNano()
	for _, s := range []stored{
		{State: int(dedupe.StatePending), Token: "TOK", Fingerprint: hexFP, LeaseUntil: now},
		{State: int(dedupe.StatePending), Token: "TOK", Fingerprint: strings.ToUpper(hexFP), LeaseUntil: now, Frame: "frame-x.1.2", FrameUntil: now + 1},
		{State: int(dedupe.StatePending), Fingerprint: "fp-short", Frame: "frame-x.1.2@7-0", FrameUntil: -now, Resolved: true},
		{State: int(dedupe.StateCommitted), Fingerprint: hexFP, ExpiresAt: now, Status: 202, Body: []byte(`{"sequence":"7-0"}`)},
		{State: int(dedupe.StateCommitted), Fingerprint: "", ExpiresAt: now, Status: 400},
	} {
		b := encode(s)
		got, err := decode(b)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", s, err)
		}
		s.Version = recordVersionBinary
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
		for n := range len(b) {
			if _, err := decode(b[:n]); err == nil {
				t.Fatalf("decode of %d of %d bytes of %+v succeeded", n, len(b), s)
			}
		}
	}
	if n := len(encode(stored{State: int(dedupe.StateCommitted), Fingerprint: hexFP})); n > 50 {
		t.Fatalf("a committed record without a body takes %d bytes: the fingerprint is not packed", n)
	}
	for _, v := range []string{"", "\x03", `{"v":3,"s":1,"f":"x"}`, `{"v":1,`} {
		if _, err := decode([]byte(v)); err == nil {
			t.Fatalf("decode(%q) succeeded", v)
		}
	}
	e := indexEntry{Tenant: "acme", Table: "events", Frame: "frame-x.1.2", QueueKey: "idem-ab", Fingerprint: hexFP}
	got, err := decodeIndexEntry(e.encode())
	if err != nil || got != e {
		t.Fatalf("index entry round trip: %+v, %v; want %+v", got, err, e)
	}
}

// TestJSONValuesOfAnEarlierReleaseAreRead: a store written by the release before the binary
// layout (JSON records and index entries) keeps answering after the upgrade: its committed record
// replays, its marked claim is inherited by the next attempt, and its index entry is resolved.
func TestJSONValuesOfAnEarlierReleaseAreRead(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	key := func(id string) dedupe.Key { return dedupe.Key{Tenant: "acme", Table: "events", ID: id} }
	marked, until := key("marked"), now.Add(time.Minute).UnixNano()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{log: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	// Written the way the JSON release wrote them (encoding/json of stored and indexEntry).
	for k, v := range map[string]string{
		key("done").Encode(): fmt.Sprintf(`{"v":1,"s":2,"t":"TOK","f":"fp-done","l":%d,"e":%d,"c":202,"b":"eyJzZXF1ZW5jZSI6IjctMCJ9"}`, now.UnixNano(), now.Add(time.Hour).UnixNano()),
		marked.Encode():      fmt.Sprintf(`{"v":1,"s":1,"t":"TOK2","f":"fp-marked","l":%d,"fr":"frame-M","fu":%d}`, now.Add(-time.Second).UnixNano(), until),
		string(indexKey(until, []byte(marked.Encode()))): fmt.Sprintf(`{"t":"acme","b":"events","f":"frame-M","q":%q,"p":"fp-marked"}`, dedupe.QueueKey(marked, "fp-marked")),
	} {
		if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: dir, ResolveFromQueue: true}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	ctx := t.Context()
	res, err := s.Reserve(ctx, key("done"), "fp-done", time.Minute)
	if err != nil || res.Outcome != dedupe.OutcomeDuplicate || string(res.Record.Response.Body) != `{"sequence":"7-0"}` {
		t.Fatalf("Reserve of a JSON committed record: %+v, %v", res, err)
	}
	var asked []Unresolved
	n, err := s.ResolveMarks(ctx, func(_ context.Context, c []Unresolved) ([]string, error) {
		asked = c
		return []string{"frame-M@9-0"}, nil
	}, func(string) time.Duration { return time.Hour })
	want := []Unresolved{{Tenant: "acme", Table: "events", Frame: "frame-M", QueueKey: dedupe.QueueKey(marked, "fp-marked")}}
	if err != nil || n != 1 || !reflect.DeepEqual(asked, want) {
		t.Fatalf("ResolveMarks over a JSON index entry: %d, %v, asked %+v; want %+v", n, err, asked, want)
	}
	res, err = s.Reserve(ctx, marked, "fp-marked", time.Minute)
	if err != nil || res.Outcome != dedupe.OutcomeClaimed || res.Claim.Frame != "frame-M@9-0" {
		t.Fatalf("Reserve after resolving a JSON mark: %+v, %v", res, err)
	}
}

// TestMarkIndexLeavesNoTombstones: a claim's index entry, set by its mark and deleted by its
// commit in the same memtable, leaves nothing in the flushed tables (a single delete meets its
// set), where a plain delete would carry a tombstone down every level.
func TestMarkIndexLeavesNoTombstones(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir(), ResolveFromQueue: true}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	ctx := t.Context()
	const n = 200
	owned := make([]dedupe.Owned, n)
	for i := range owned {
		k := dedupe.Key{Tenant: "t", Table: "e", ID: fmt.Sprint("k", i)}
		res, err := s.Reserve(ctx, k, hexFP, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		owned[i] = dedupe.Owned{Key: k, Token: res.Claim.Token}
	}
	for i, err := range s.Mark(ctx, "frame-A", time.Now().Add(time.Minute), owned) {
		if err != nil {
			t.Fatalf("Mark %d: %v", i, err)
		}
	}
	for _, o := range owned {
		if err := s.Commit(ctx, o.Key, o.Token, dedupe.Response{Status: 202, Body: []byte("{}")}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var entries, deletions uint64
	for _, level := range levels {
		for _, tbl := range level {
			entries += tbl.Properties.NumEntries
			deletions += tbl.Properties.NumDeletions
		}
	}
	if entries != n || deletions != 0 {
		t.Fatalf("flushed tables hold %d entries and %d deletions, want the %d committed records and no deletion", entries, deletions, n)
	}
}
