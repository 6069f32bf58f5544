package query

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Access is what a caller's credential restricts its requests to; the zero value restricts
// nothing.
type Access struct {
	// AllowTable is Request.AllowTable.
	AllowTable func(table string) bool
	// Policy is Request.Policy.
	Policy func(sql string) (string, []store.Param, error)
	// Readable, when not nil, says which columns of a table of the tenant's database the
	// caller may read (a nil function: every column). A DESCRIBE on the ClickHouse interface
	// of a table under Policy lists only those; without Readable, Policy refuses it.
	Readable func(table string) (func(col string) bool, error)
	// MaxRows and MaxExecutionTime lower the tenant's limits (0: the tenant's).
	MaxRows          uint64
	MaxExecutionTime time.Duration
}

// Apply restricts req as a says.
func (a Access) Apply(req *Request) {
	req.AllowTable, req.Policy = a.AllowTable, a.Policy
	if a.MaxRows > 0 && (req.MaxRows == 0 || a.MaxRows < req.MaxRows) {
		req.MaxRows = a.MaxRows
	}
	if a.MaxExecutionTime > 0 {
		req.MaxExecutionTime = a.MaxExecutionTime
	}
}

// applyPolicy returns req with its SQL rewritten by req.Policy and the parameters the rewrite
// binds added to a copy of its own.
func applyPolicy(req Request) (Request, error) {
	for name := range req.Params {
		if strings.HasPrefix(name, policy.ParamPrefix) {
			return req, fmt.Errorf("%w: parameter names starting with %s are reserved", ErrRejected, policy.ParamPrefix)
		}
	}
	sql, params, err := req.Policy(req.SQL)
	if errors.Is(err, sqlscan.ErrRejected) {
		return req, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if err != nil {
		return req, err
	}
	out := maps.Clone(req.Params)
	if out == nil {
		out = make(map[string][]byte, len(params))
	}
	for _, p := range params {
		out[p.Name] = p.Value
	}
	req.SQL, req.Params, req.Policy = sql, out, nil
	return req, nil
}

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
