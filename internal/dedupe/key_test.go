package dedupe_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// unescape reverses the escaping of one encoded part; it fails the test on a malformed part.
func unescape(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			t.Fatalf("truncated escape in %q", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			t.Fatalf("bad escape in %q: %v", s, err)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String()
}

func checkEncoding(t *testing.T, k dedupe.Key) {
	t.Helper()
	enc := k.Encode()
	if !utf8.ValidString(enc) {
		t.Fatalf("Encode(%v) = %q is not valid UTF-8", k, enc)
	}
	if !strings.HasPrefix(enc, dedupe.TenantPrefix(k.Tenant)) {
		t.Fatalf("Encode(%v) = %q does not start with the tenant prefix %q", k, enc, dedupe.TenantPrefix(k.Tenant))
	}
	parts := strings.Split(enc, "/")
	if len(parts) != 3 {
		t.Fatalf("Encode(%v) = %q has %d parts, want 3", k, enc, len(parts))
	}
	if got := unescape(t, parts[0]); got != k.Tenant {
		t.Fatalf("tenant round trip = %q, want %q", got, k.Tenant)
	}
	if got := unescape(t, parts[1]); got != k.Table {
		t.Fatalf("table round trip = %q, want %q", got, k.Table)
	}
	if strings.HasPrefix(parts[2], "#") {
		if len(parts[2]) != 65 {
			t.Fatalf("hashed id %q is not # and 64 hex digits", parts[2])
		}
		return
	}
	if got := unescape(t, parts[2]); got != k.ID {
		t.Fatalf("id round trip = %q, want %q", got, k.ID)
	}
}

func TestKeyEncodeRoundTrips(t *testing.T) {
	for _, k := range []dedupe.Key{
		{Tenant: "acme", Table: "events", ID: "abc"},
		{Tenant: "a/b", Table: "c#d", ID: "e:f%g"},
		{Tenant: "ü", Table: "🔑", ID: "nul\x00\xff"},
		{Tenant: "t", Table: "x", ID: strings.Repeat("/", 400)},
	} {
		checkEncoding(t, k)
	}
}

func TestKeyEncodeHashesLongIDs(t *testing.T) {
	short := dedupe.Key{Tenant: "t", Table: "x", ID: strings.Repeat("a", dedupe.MaxEncodedIDLen)}
	if enc := short.Encode(); strings.Contains(enc, "#") {
		t.Fatalf("ID of exactly MaxEncodedIDLen was hashed: %q", enc)
	}
	long := dedupe.Key{Tenant: "t", Table: "x", ID: strings.Repeat("a", dedupe.MaxEncodedIDLen+1)}
	long2 := dedupe.Key{Tenant: "t", Table: "x", ID: strings.Repeat("a", dedupe.MaxEncodedIDLen) + "b"}
	if !strings.HasPrefix(long.Encode(), "t/x/#") || long.Encode() == long2.Encode() {
		t.Fatalf("long IDs encode to %q and %q, want distinct hashed keys", long.Encode(), long2.Encode())
	}
	// An ID that escapes past the limit is hashed even though its raw length is small.
	slashes := dedupe.Key{Tenant: "t", Table: "x", ID: strings.Repeat("/", 400)}
	if !strings.HasPrefix(slashes.Encode(), "t/x/#") {
		t.Fatalf("400 slashes (1200 bytes escaped) not hashed: %q", slashes.Encode()[:20])
	}
	if err := long.Validate(); err != nil {
		t.Fatalf("Validate long ID: %v", err)
	}
}

func TestKeyValidate(t *testing.T) {
	for _, k := range []dedupe.Key{
		{Table: "x", ID: "i"},
		{Tenant: "t", ID: "i"},
		{Tenant: "t", Table: "x"},
		{Tenant: strings.Repeat("t", dedupe.MaxEncodedKeyLen), Table: "x", ID: "i"},
	} {
		if err := k.Validate(); !errors.Is(err, dedupe.ErrInvalid) {
			t.Fatalf("Validate(%v) = %v, want ErrInvalid", k, err)
		}
	}
}

func FuzzKeyEncodeInjective(f *testing.F) {
	f.Add("a/b", "c", "d", "a", "b/c", "d")
	f.Add("a", "b", "c#d", "a", "b#c", "d")
	f.Add("%2F", "x", "y", "/", "x", "y")
	f.Add("t", "x", "\xff", "t", "x", "\xfe")
	f.Fuzz(func(t *testing.T, t1, tb1, id1, t2, tb2, id2 string) {
		k1 := dedupe.Key{Tenant: t1, Table: tb1, ID: id1}
		k2 := dedupe.Key{Tenant: t2, Table: tb2, ID: id2}
		checkEncoding(t, k1)
		checkEncoding(t, k2)
		if k1 != k2 && k1.Encode() == k2.Encode() {
			t.Fatalf("%v and %v both encode to %q", k1, k2, k1.Encode())
		}
	})
}

// TestQueueKeyIsStable: a mark stored by an earlier release names its request by the QueueKey
// that release computed, so the hashed bytes (key.String(), a zero byte, the fingerprint) must
// never change. The literal was computed with the original fmt-based form.
func TestQueueKeyIsStable(t *testing.T) {
	k := dedupe.Key{Tenant: "acme", Table: "events", ID: "order-42\x1fjwt\xff"}
	if got, want := dedupe.QueueKey(k, "ab12"), "idem-8489f09ca826f7fd5fef723a0d0e4e6666d1b1ff738dcddaa5202e6b34945421"; got != want {
		t.Fatalf("QueueKey = %s, want %s", got, want)
	}
	for _, k := range []dedupe.Key{
		{Tenant: "t", Table: "x", ID: "i"},
		{Tenant: "tenant \"q\"", Table: "ta/ble", ID: "日本\t\x00"},
	} {
		sum := sha256.Sum256([]byte(k.String() + "\x00" + "fp"))
		if got, want := dedupe.QueueKey(k, "fp"), "idem-"+hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("QueueKey(%v) = %s, want %s", k, got, want)
		}
	}
}
