package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// ParamPrefix starts the names of the parameters a rewrite adds; a request may not bind
// parameters of its own under it.
const ParamPrefix = "_wh_policy_"

// Resolver returns the policy bound for a table of the tenant's database, and false when the
// role reads the table without one.
type Resolver func(table string) (*Bound, bool, error)

// Rewrite returns sql with every reference to a table of database that has a policy replaced by
// the policy's subquery (named like the table, so that t.col keeps working, and carrying the
// reference's FINAL), and the parameters the subqueries bind. The rows a query can reach are
// then only those of the subqueries, whatever the rest of the SQL does: a UNION, a JOIN, a
// nested subquery, IN t, ARRAY JOIN or FINAL reads the same references. SQL the scanner is not
// sure of (table functions, dictionaries, a parameter in place of a name) is refused, and so is
// SQL naming a column a policy denies (ErrColumnDenied), so that a denial has a stable code
// instead of the engine's unknown column. This is the function every read surface applies:
// /v1/query, pipes and the ClickHouse interface.
func Rewrite(sql, database string, resolve Resolver) (string, []store.Param, error) {
	var params []store.Param
	var failure error
	names := sqlscan.Identifiers(sql)
	if slices.ContainsFunc(names, func(s string) bool { return strings.EqualFold(s, "SETTINGS") }) {
		// No setting may change how the policy's subquery reads, nor lift the role's limits.
		return "", nil, fmt.Errorf("%w: a SETTINGS clause is not accepted in a query under a row policy", sqlscan.ErrRejected)
	}
	n := 0
	out, err := sqlscan.RewriteTables(sql, func(r sqlscan.Ref) (string, bool) {
		if failure != nil || r.Table.Database != "" && r.Table.Database != database {
			return "", false
		}
		b, ok, err := resolve(r.Table.Name)
		if err != nil {
			failure = err
			return "", false
		}
		if !ok {
			return "", false
		}
		for _, c := range b.Denied() {
			if slices.Contains(names, c) {
				failure = fmt.Errorf("%w: this token's role may not read column %s of table %s", ErrColumnDenied, strconv.Quote(c), b.table)
				return "", false
			}
		}
		sub, ps := b.Subquery(database, ParamPrefix+strconv.Itoa(n)+"_", r.Final())
		n++
		params = append(params, ps...)
		if !r.Aliased && !r.In {
			sub += " AS " + sqlbind.QuoteIdent(r.Table.Name)
		}
		return sub, true
	})
	if failure != nil {
		return "", nil, failure
	}
	if err != nil {
		return "", nil, err
	}
	return out, params, nil
}
