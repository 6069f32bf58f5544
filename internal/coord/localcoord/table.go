package localcoord

import "sync"

// Table is the in-process lease table that coordinators share. Coordinators
// built over the same Table exclude each other; a nil Deps.Table gives a
// coordinator a private one.
type Table struct {
	mu     sync.Mutex
	leases map[string]*term  // live terms by lease name
	tokens map[string]uint64 // last token issued per lease name
}

// NewTable returns an empty lease table.
func NewTable() *Table {
	return &Table{leases: make(map[string]*term), tokens: make(map[string]uint64)}
}
