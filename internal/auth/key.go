package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
)

// Scope re-exports settings.Scope so callers of auth need not import settings for it.
type Scope = settings.Scope

// The scopes, re-exported from settings.
const (
	ScopeIngest = settings.ScopeIngest
	ScopeQuery  = settings.ScopeQuery
	ScopeStream = settings.ScopeStream
	ScopeAdmin  = settings.ScopeAdmin
)

const (
	tokenPrefix = "wh_"
	idBytes     = 6
	secretBytes = 32
)

// NewKey is a freshly generated API key. Token is shown once; only ID and Hash are stored.
type NewKey struct {
	// ID is the public key id.
	ID string
	// Token is the full credential wh_<id>_<secret>, the only form a client ever sends.
	Token string
	// Hash is the hex SHA-256 of the secret, the value stored in settings.
	Hash string
}

// GenerateKey creates a key from random; nil means crypto/rand.Reader.
func GenerateKey(random io.Reader) (NewKey, error) {
	if random == nil {
		random = rand.Reader
	}
	b := make([]byte, idBytes+secretBytes)
	if _, err := io.ReadFull(random, b); err != nil {
		return NewKey{}, fmt.Errorf("auth: generate key: %w", err)
	}
	id, secret := hex.EncodeToString(b[:idBytes]), hex.EncodeToString(b[idBytes:])
	return NewKey{ID: id, Token: tokenPrefix + id + "_" + secret, Hash: HashSecret(secret)}, nil
}

// ParseToken splits wh_<id>_<secret>. ok is false when token does not have that shape or the id is
// not a valid key id.
func ParseToken(token string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || secret == "" || !settings.ValidKeyID(id) {
		return "", "", false
	}
	return id, secret, true
}

// HashSecret returns the hex SHA-256 of secret, the form stored in settings.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// secretMatches reports whether sha256(secret) equals the stored hex hash, comparing the digests
// in constant time so the response time does not reveal how much of a guess was right.
func secretMatches(secret, storedHex string) bool {
	want, err := hex.DecodeString(storedHex)
	valid := err == nil && len(want) == sha256.Size
	if !valid {
		want = make([]byte, sha256.Size) // still compare, to keep the timing uniform
	}
	got := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want) == 1 && valid
}

// KeyYAML returns the settings entry for k, to paste under the tenant's keys: list.
func KeyYAML(k NewKey, scopes []Scope, tables []string, expires time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- {id: %s, hash: %s, scopes: [", k.ID, k.Hash)
	for i, s := range scopes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	b.WriteString("]")
	if len(tables) > 0 {
		fmt.Fprintf(&b, ", tables: [%s]", strings.Join(tables, ", "))
	}
	if !expires.IsZero() {
		fmt.Fprintf(&b, ", expires: %s", expires.UTC().Format(time.RFC3339))
	}
	b.WriteString("}")
	return b.String()
}
