package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
)

// Deps names what a query's result depends on.
type Deps struct {
	// Tables are the tenant's tables the query reads, as the table scanner found them.
	Tables []string
	// AllTables is set when the tables are not known for sure: the result then depends
	// on every table of the tenant through the tenant's write counter.
	AllTables bool
}

// Versions is a snapshot of the version tokens a query depends on, read before it runs.
type Versions struct {
	// Epoch is the tenant's epoch, advanced by BumpTenant; every key folds it.
	Epoch uint64
	// Writes is the tenant's write counter, advanced by every BumpTable; only keys of
	// AllTables queries fold it.
	Writes uint64
	// AllTables records that the snapshot was read for Deps.AllTables.
	AllTables bool
	// Tables maps each table of Deps.Tables to its version.
	Tables map[string]uint64
}

// Key identifies a cached result. Backends build their physical key from the escaped
// tenant followed by Hash, so every key starts with the tenant.
type Key struct {
	// Tenant is the tenant that owns the entry.
	Tenant string
	// Hash is a hex SHA-256 digest of the normalised SQL, parameters and versions.
	Hash string
}

// String returns the key as "escapedTenant/hash".
func (k Key) String() string { return EscapeTenant(k.Tenant) + "/" + k.Hash }

// NewKey builds the key of a result from the tenant, the normalised SQL (see
// query/sqlscan.Normalize), the bound parameters and the versions read before the query.
// Parameters are folded in name order, so the map's iteration order does not matter;
// every field is length-prefixed, so no two distinct inputs share a digest by
// concatenation. It is DigestQuery(sqlNormalised, params).Key(tenant, v).
func NewKey(tenant, sqlNormalised string, params map[string]string, v Versions) Key {
	return DigestQuery(sqlNormalised, params).Key(tenant, v)
}

// QueryDigest is the SHA-256 digest of a query's normalised SQL and bound parameters: the
// part of a [Key] that stays the same while the data changes. A caller that serves the same
// query over and over computes it once and builds each lookup's key with [QueryDigest.Key],
// which hashes only the tenant, the digest and the versions.
type QueryDigest [sha256.Size]byte

// DigestQuery digests the normalised SQL and the parameters (folded in name order, each
// field length-prefixed).
func DigestQuery(sqlNormalised string, params map[string]string) QueryDigest {
	n := 64 + len(sqlNormalised)
	for name, val := range params {
		n += 16 + len(name) + len(val)
	}
	b := make([]byte, 0, n)
	b = appendField(b, "wavehouse-query-v2")
	b = appendField(b, sqlNormalised)
	b = binary.BigEndian.AppendUint64(b, uint64(len(params)))
	if len(params) > 0 {
		names := make([]string, 0, len(params))
		for name := range params {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			b = appendField(b, name)
			b = appendField(b, params[name])
		}
	}
	return sha256.Sum256(b)
}

// Key returns the key of the query's result for tenant under the versions v.
func (q QueryDigest) Key(tenant string, v Versions) Key {
	var stack [256]byte
	b := appendField(stack[:0], "wavehouse-cache-v2")
	b = appendField(b, tenant)
	b = append(b, q[:]...)
	b = binary.BigEndian.AppendUint64(b, v.Epoch)
	if v.AllTables {
		b = appendField(b, "all")
		b = binary.BigEndian.AppendUint64(b, v.Writes)
	} else {
		b = appendField(b, "tables")
	}
	b = binary.BigEndian.AppendUint64(b, uint64(len(v.Tables)))
	if len(v.Tables) == 1 {
		for name, ver := range v.Tables {
			b = appendField(b, name)
			b = binary.BigEndian.AppendUint64(b, ver)
		}
	} else if len(v.Tables) > 1 {
		tables := make([]string, 0, len(v.Tables))
		for name := range v.Tables {
			tables = append(tables, name)
		}
		slices.Sort(tables)
		for _, name := range tables {
			b = appendField(b, name)
			b = binary.BigEndian.AppendUint64(b, v.Tables[name])
		}
	}
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return Key{Tenant: tenant, Hash: string(h[:])}
}

func appendField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// EscapeTenant returns tenant with every byte outside [A-Za-z0-9_-] percent-encoded, so
// the result contains no separator (':', '/', '{', '}') and distinct tenants stay
// distinct. The empty tenant escapes to "%".
func EscapeTenant(tenant string) string { return escape(tenant) }

// EscapeName escapes a table name the same way as [EscapeTenant].
func EscapeName(name string) string { return escape(name) }

func escape(s string) string {
	if s == "" {
		return "%"
	}
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexdigits[c>>4])
			b.WriteByte(hexdigits[c&15])
		}
	}
	return b.String()
}

// NewToken returns a fresh random version token: 64 random bits, never 0. Backends write one
// on every bump and whenever a version is found missing, so a version that was lost (deleted,
// evicted, or emptied by a restart) never comes back to a value an older fill is filed under.
func NewToken() uint64 {
	for {
		if t := rand.Uint64(); t != 0 {
			return t
		}
	}
}
