package store

// Batch is one insert: rows for the given columns of a table, either as RowBinary (what the
// queue carries since payload version 2) or as canonical JSON rows (version 1 backlogs).
type Batch struct {
	// Target is where the table lives.
	Target Target
	// Table is the unqualified table name.
	Table string
	// Columns lists the inserted columns; every row gives them in this order.
	Columns []string
	// RowBinary, when not empty, holds Count rows in ClickHouse's RowBinary format, each value
	// encoded in the matching entry of Types; Rows is then empty. The store sends these bytes
	// as they are (FORMAT RowBinary), without decoding them.
	RowBinary []byte
	Count     int
	// Types are the ClickHouse types of Columns that RowBinary was encoded in.
	Types []string
	// Rows are canonical rows: JSON arrays of canonical values (see chtype), one per row.
	Rows [][]byte
	// DedupToken, when set, is sent as the insert_deduplication_token of the statement: a repeat
	// of an insert with the same token into a table that deduplicates inserts (Replicated*, or
	// MergeTree with non_replicated_deduplication_window > 0) is dropped by the server. Stores
	// whose engine lacks the setting (Capabilities.InsertDedupToken false) ignore it.
	DedupToken string
}

// Len returns the number of rows of the batch.
func (b Batch) Len() int {
	if len(b.RowBinary) > 0 {
		return b.Count
	}
	return len(b.Rows)
}

// Bytes returns the total size of the rows, for metrics and batching decisions.
func (b Batch) Bytes() int {
	n := len(b.RowBinary)
	for _, r := range b.Rows {
		n += len(r)
	}
	return n
}
