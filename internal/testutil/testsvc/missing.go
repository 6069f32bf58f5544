package testsvc

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Missing reports a missing dependency: it skips the test with the message
// locally, and fails it when the environment variable CI is true, so a CI run
// can never pass by skipping.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("missing dependency (CI=true): "+format, args...)
	}
	t.Skipf("missing dependency: "+format, args...)
}

// inCI reports whether the CI environment variable holds a true value.
func inCI() bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("CI")))
	return err == nil && v
}

// UniqueName returns a short identifier made of [a-z0-9_] that starts with
// prefix (lower-cased, other characters replaced by '_') followed by '_' and
// ten random hex digits. It is meant for database names, key prefixes and
// stream prefixes on shared servers.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("t")
	}
	if !strings.HasSuffix(b.String(), "_") {
		b.WriteByte('_')
	}
	var raw [5]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatalf("testsvc: random name: %v", err)
	}
	b.WriteString(hex.EncodeToString(raw[:]))
	return b.String()
}
