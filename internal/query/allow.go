package query

import (
	"fmt"
	"strconv"
)

// checkTables applies req.AllowTable to every table the query reads: the declared
// req.Tables, or else the tables the scanner found. A restricted principal may not read what
// cannot be named, so a scan that is not sure of its tables refuses, and so does a table of
// another database (the tenant's own database, spelt out, is the same as no qualifier). The
// scanner may report extra names (a CTE's name): they must pass too, which refuses rather
// than leaks.
func checkTables(req Request, info *sqlInfo, database string) error {
	if req.AllowTable == nil {
		return nil
	}
	if len(req.Tables) > 0 {
		for _, t := range req.Tables {
			if !req.AllowTable(t) {
				return fmt.Errorf("%w: this key may not read table %s", ErrTableNotAllowed, strconv.Quote(t))
			}
		}
		return nil
	}
	if !info.sure {
		return fmt.Errorf("%w: the tables this query reads could not be determined (a table function, a dictionary, a parameter in place of a name); a key restricted to tables may only run queries that name their tables plainly", ErrTableNotAllowed)
	}
	for _, t := range info.tables {
		if t.Database != "" && t.Database != database {
			return fmt.Errorf("%w: this key may not read table %s of another database", ErrTableNotAllowed, strconv.Quote(t.String()))
		}
		if !req.AllowTable(t.Name) {
			return fmt.Errorf("%w: this key may not read table %s", ErrTableNotAllowed, strconv.Quote(t.Name))
		}
	}
	return nil
}
