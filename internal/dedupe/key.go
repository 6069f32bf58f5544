package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxEncodedIDLen is the length above which Key.Encode replaces the escaped idempotency key by
// "#" followed by the hex SHA-256 of the raw key, so encoded keys stay within every backend's key
// size limit (DynamoDB allows 2,048 bytes for a partition key).
const MaxEncodedIDLen = 1024

// MaxEncodedKeyLen is the largest encoded key a Store accepts; longer tenant or table names are
// rejected with ErrInvalid.
const MaxEncodedKeyLen = 2048

// Key names one idempotency record. All three parts are required. Keys with any part different
// are independent records: tenants and tables never share a keyspace.
type Key struct {
	// Tenant is the tenant derived from the request's credential.
	Tenant string
	// Table is the target table of the request.
	Table string
	// ID is the client's idempotency key, compared byte for byte.
	ID string
}

// String returns a form of the key suitable for error messages. It never contains the request
// body.
func (k Key) String() string {
	return fmt.Sprintf("%q/%q/%q", k.Tenant, k.Table, k.ID)
}

// Validate reports whether the key can be stored: every part non-empty and the encoded form
// within MaxEncodedKeyLen. The error wraps ErrInvalid.
func (k Key) Validate() error {
	switch {
	case k.Tenant == "":
		return fmt.Errorf("%w: empty tenant", ErrInvalid)
	case k.Table == "":
		return fmt.Errorf("%w: empty table", ErrInvalid)
	case k.ID == "":
		return fmt.Errorf("%w: empty idempotency key", ErrInvalid)
	}
	if n := len(k.Encode()); n > MaxEncodedKeyLen {
		return fmt.Errorf("%w: encoded key is %d bytes, more than %d", ErrInvalid, n, MaxEncodedKeyLen)
	}
	return nil
}

// Encode returns the backend key for k: the escaped tenant, "/", the escaped table, "/", and
// the escaped ID (or "#" and the hex SHA-256 of the ID when the escaped ID is longer than
// MaxEncodedIDLen). Escaping percent-encodes '%', '/', '#', control characters and bytes that are
// not valid UTF-8, so the result is valid UTF-8, starts with the tenant, and distinct keys always
// encode to distinct strings (up to SHA-256 collisions for hashed IDs).
func (k Key) Encode() string {
	var b strings.Builder
	b.Grow(len(k.Tenant) + len(k.Table) + len(k.ID) + 2)
	escapeTo(&b, k.Tenant)
	b.WriteByte('/')
	escapeTo(&b, k.Table)
	b.WriteByte('/')
	id := escape(k.ID)
	if len(id) > MaxEncodedIDLen {
		sum := sha256.Sum256([]byte(k.ID))
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(sum[:]))
	} else {
		b.WriteString(id)
	}
	return b.String()
}

// QueueKey is the identity in the queue (mq.Record.IdempotencyKey) of the request that made
// the record of key with fingerprint: a hash of both, so resolving a marked frame recognises
// the same request but never a different request that reuses the key after its record
// expired. The api publishes it; a store that resolves marks from the queue recomputes it.
// The hashed bytes are key.String(), a zero byte and the fingerprint, built with strconv
// rather than fmt (it runs twice per keyed request); TestQueueKeyIsStable pins them.
func QueueKey(key Key, fingerprint string) string {
	b := make([]byte, 0, 3*len(`""`)+2+len(key.Tenant)+len(key.Table)+len(key.ID)+1+len(fingerprint))
	b = strconv.AppendQuote(b, key.Tenant)
	b = append(b, '/')
	b = strconv.AppendQuote(b, key.Table)
	b = append(b, '/')
	b = strconv.AppendQuote(b, key.ID)
	b = append(b, 0)
	b = append(b, fingerprint...)
	sum := sha256.Sum256(b)
	return "idem-" + hex.EncodeToString(sum[:])
}

// TenantPrefix returns the prefix shared by the encoded keys of every record of tenant.
func TenantPrefix(tenant string) string {
	return escape(tenant) + "/"
}

func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	escapeTo(&b, s)
	return b.String()
}

func escapeTo(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r < 0x20 || r == 0x7f || r == '%' || r == '/' || r == '#' {
			for j := range size {
				c := s[i+j]
				b.WriteByte('%')
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			}
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}
