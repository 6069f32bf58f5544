package sqlbind

import "strings"

// InsertInto writes the head both store backends start an insert with, INSERT INTO
// `database`.`table` (`c1`, `c2`), to q: every name back-quoted, so a table or column name is
// always an identifier.
func InsertInto(q *strings.Builder, database, table string, columns []string) {
	q.WriteString("INSERT INTO ")
	q.WriteString(QuoteIdent(database))
	q.WriteByte('.')
	q.WriteString(QuoteIdent(table))
	q.WriteString(" (")
	for i, c := range columns {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(QuoteIdent(c))
	}
	q.WriteByte(')')
}
