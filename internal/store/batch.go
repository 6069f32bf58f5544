package store

// Batch is one insert: canonical rows for some columns of one table.
type Batch struct {
	// Target is where the table lives.
	Target Target
	// Table is the unqualified table name.
	Table string
	// Columns lists the inserted columns; every row gives them in this order.
	Columns []string
	// Rows are canonical rows: JSON arrays of canonical values (see chtype), one per row.
	Rows [][]byte
	// DedupToken, when set, is sent as the insert_deduplication_token of the statement: a repeat
	// of an insert with the same token into a table that deduplicates inserts (Replicated*, or
	// MergeTree with non_replicated_deduplication_window > 0) is dropped by the server. Stores
	// whose engine lacks the setting (Capabilities.InsertDedupToken false) ignore it.
	DedupToken string
}

// Bytes returns the total size of the rows, for metrics and batching decisions.
func (b Batch) Bytes() int {
	n := 0
	for _, r := range b.Rows {
		n += len(r)
	}
	return n
}
