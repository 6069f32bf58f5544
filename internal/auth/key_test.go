package auth

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
)

func TestGenerateKeyFormat(t *testing.T) {
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, ok := ParseToken(k.Token)
	if !ok || id != k.ID || !settings.ValidKeyID(id) || len(secret) != 64 {
		t.Fatalf("token %q parsed to %q %d-char secret ok=%v", k.Token, id, len(secret), ok)
	}
	if k.Hash != HashSecret(secret) || len(k.Hash) != 64 || strings.Contains(k.Hash, secret) {
		t.Fatalf("hash %q", k.Hash)
	}
	k2, _ := GenerateKey(nil)
	if k2.ID == k.ID || k2.Token == k.Token {
		t.Fatal("two generated keys are equal")
	}
	// A deterministic reader gives the documented layout.
	det, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{0xab}, 38)))
	if err != nil || det.Token != "wh_abababababab_"+strings.Repeat("ab", 32) {
		t.Fatalf("deterministic key = %q, %v", det.Token, err)
	}
	if _, err := GenerateKey(bytes.NewReader(nil)); err == nil {
		t.Fatal("short random source accepted")
	}
}

func TestParseToken(t *testing.T) {
	for _, bad := range []string{"", "wh_", "wh_abc_def", "xx_a1b2c3d4e5f6_secret", "wh_a1b2c3d4e5f6", "wh_a1b2c3d4e5f6_", "wh_A1B2C3D4E5F6_secret"} {
		if _, _, ok := ParseToken(bad); ok {
			t.Errorf("ParseToken(%q) accepted", bad)
		}
	}
}

// TestSecretMatches checks the comparison's behaviour; that it is constant-time is by
// construction (crypto/subtle.ConstantTimeCompare over fixed-size digests, reviewed in key.go).
func TestSecretMatches(t *testing.T) {
	secret := strings.Repeat("ab", 32)
	h := HashSecret(secret)
	cases := []struct {
		secret, hash string
		want         bool
	}{
		{secret, h, true},
		{secret[:63] + "c", h, false},        // last character differs
		{secret[:63], h, false},              // prefix of the secret
		{secret + "ab", h, false},            // extended secret
		{secret, h[:63] + "0", h[63] == '0'}, // hash differs in its last digit
		{secret, "", false},                  // unknown key: no hash
		{secret, "zz", false},                // malformed stored hash
		{"", HashSecret(""), true},           // empty secret matches its own hash only
	}
	for i, c := range cases {
		if got := secretMatches(c.secret, c.hash); got != c.want {
			t.Errorf("case %d: secretMatches = %v, want %v", i, got, c.want)
		}
	}
}

func TestKeyYAMLLoads(t *testing.T) {
	k, _ := GenerateKey(nil)
	line := KeyYAML(k, []Scope{ScopeIngest, ScopeQuery}, []string{"events", "pages"}, time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC))
	if strings.Contains(line, k.Token[16:]) {
		t.Fatalf("yaml line contains the secret: %s", line)
	}
	dir := t.TempDir()
	writeTenant(t, dir, "acme", "database: acme\nkeys:\n  "+line+"\n")
	snap, err := settings.Load(dir, time.Now())
	if err != nil {
		t.Fatalf("generated line does not load: %v\n%s", err, line)
	}
	got, _, ok := snap.KeyByID(k.ID)
	if !ok || got.Hash != k.Hash || len(got.Scopes) != 2 || len(got.Tables) != 2 || got.Expires.IsZero() {
		t.Fatalf("loaded key = %+v", got)
	}
}
