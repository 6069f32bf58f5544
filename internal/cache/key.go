package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
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

// Versions is a snapshot of the counters a query depends on, read before it runs.
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
// concatenation.
func NewKey(tenant, sqlNormalised string, params map[string]string, v Versions) Key {
	h := sha256.New()
	writeField(h, "wavehouse-cache-v1")
	writeField(h, tenant)
	writeField(h, sqlNormalised)
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	writeUint(h, uint64(len(names)))
	for _, name := range names {
		writeField(h, name)
		writeField(h, params[name])
	}
	writeUint(h, v.Epoch)
	if v.AllTables {
		writeField(h, "all")
		writeUint(h, v.Writes)
	} else {
		writeField(h, "tables")
	}
	tables := make([]string, 0, len(v.Tables))
	for name := range v.Tables {
		tables = append(tables, name)
	}
	slices.Sort(tables)
	writeUint(h, uint64(len(tables)))
	for _, name := range tables {
		writeField(h, name)
		writeUint(h, v.Tables[name])
	}
	return Key{Tenant: tenant, Hash: hex.EncodeToString(h.Sum(nil))}
}

func writeField(h hash.Hash, s string) {
	writeUint(h, uint64(len(s)))
	h.Write([]byte(s))
}

func writeUint(h hash.Hash, n uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	h.Write(b[:])
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
