package query

import (
	"sync"

	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
)

// Bounds of the memos. A dashboard polls a few dozen distinct texts; the bounds only keep a
// flood of distinct texts (ad-hoc queries, a parameter spliced into the SQL) from growing
// the memo without limit.
const (
	memoMaxEntries = 4096
	memoMaxBytes   = 8 << 20 // texts plus what was computed from them, approximately
	memoMaxKey     = 16 << 10
)

// memo is a bounded map from a text (a SQL statement, a request body) to what was computed
// from it. Lookups take a shared lock and allocate nothing, so concurrent hits do not queue
// behind each other. When full it starts over instead of tracking recency: refilling the
// handful of hot texts costs one parse each, and a stream of distinct texts costs no more
// than parsing each, which happens anyway. Values are shared by every caller and must not be
// modified.
type memo[V any] struct {
	mu    sync.RWMutex
	m     map[string]V
	bytes int
}

// get returns the value memoised for the text b.
func (m *memo[V]) get(b []byte) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[string(b)]
	m.mu.RUnlock()
	return v, ok
}

// getString returns the value memoised for s.
func (m *memo[V]) getString(s string) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[s]
	m.mu.RUnlock()
	return v, ok
}

// put memoises v for the text k; size approximates the bytes v holds besides k. Texts above
// memoMaxKey are not memoised.
func (m *memo[V]) put(k string, v V, size int) {
	if len(k) > memoMaxKey {
		return
	}
	size += len(k) + 64
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= memoMaxEntries || m.bytes+size > memoMaxBytes {
		m.m, m.bytes = make(map[string]V), 0
	}
	m.m[k] = v
	m.bytes += size
}

// len returns the number of memoised texts.
func (m *memo[V]) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// sqlInfo is what the service learns from a SQL text alone: whether it is a read statement,
// its normalised form for the cache key, and the tables it reads. It does not depend on the
// tenant, so one scan serves every request that sends the same text.
type sqlInfo struct {
	// err is the statement check's verdict (nil: a single read statement).
	err error
	// normalized is sqlscan.Normalize of the text.
	normalized string
	// tables are the tables sqlscan.Tables found; sure is its verdict on completeness.
	tables []sqlscan.Table
	sure   bool
	// local are the names of tables without a database qualifier; qualified says whether
	// some table has one (then the request's database decides what it depends on).
	local     []string
	qualified bool
}

// scanSQL computes the sqlInfo of a text.
func scanSQL(sql string) *sqlInfo {
	info := &sqlInfo{err: sqlscan.Check(sql)}
	if info.err != nil {
		return info
	}
	info.normalized = sqlscan.Normalize(sql)
	info.tables, info.sure = sqlscan.Tables(sql)
	for _, t := range info.tables {
		if t.Database != "" {
			info.qualified = true
			continue
		}
		info.local = append(info.local, t.Name)
	}
	return info
}

// size approximates the bytes info holds.
func (info *sqlInfo) size() int {
	n := len(info.normalized) + 64
	for _, t := range info.tables {
		n += len(t.Database) + len(t.Name) + 48
	}
	return n
}

// sqlInfo returns the memoised sqlInfo of sql, scanning it on first sight.
func (s *Service) sqlInfo(sql string) *sqlInfo {
	if info, ok := s.sqls.getString(sql); ok {
		return info
	}
	info := scanSQL(sql)
	s.sqls.put(sql, info, info.size())
	return info
}
