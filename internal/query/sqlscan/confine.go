package sqlscan

import (
	"fmt"
	"strings"
)

// confinedStatements are the statements a tenant may send as operator SQL, with the object
// words allowed after them (nil: any continuation, checked by the other rules).
var confinedStatements = map[string]map[string]bool{
	"SELECT": nil, "WITH": nil, "DESCRIBE": nil, "DESC": nil, "EXISTS": nil, "EXPLAIN": nil,
	"INSERT": nil, "DELETE": nil, "TRUNCATE": nil, "OPTIMIZE": nil, "EXCHANGE": {"TABLES": true},
	"SHOW":   {"TABLES": true, "CREATE": true, "COLUMNS": true, "FIELDS": true, "INDEX": true, "INDEXES": true, "INDICES": true, "KEYS": true},
	"CREATE": {"TABLE": true, "VIEW": true, "MATERIALIZED": true, "TEMPORARY": true, "OR": true},
	"DROP":   {"TABLE": true, "VIEW": true, "TEMPORARY": true},
	"ALTER":  {"TABLE": true},
	"RENAME": {"TABLE": true},
}

// serverObjects are object words that name something beyond the tenant's tables.
var serverObjects = map[string]bool{
	"DATABASE": true, "DATABASES": true, "ALL": true, "DICTIONARY": true, "DICTIONARIES": true,
	"USER": true, "ROLE": true, "QUOTA": true, "POLICY": true, "ROW": true, "SETTINGS": true,
	"PROFILE": true, "FUNCTION": true, "NAMED": true, "CLUSTER": true,
}

// reachingFunctions are table functions and engines that read other databases, files, the
// network or run programs on the server. Matched on the lower-cased name.
var reachingFunctions = map[string]bool{
	"remote": true, "remotesecure": true, "cluster": true, "clusterallreplicas": true,
	"url": true, "urlcluster": true, "file": true, "filecluster": true, "filelog": true,
	"mysql": true, "postgresql": true, "jdbc": true, "odbc": true, "mongodb": true,
	"redis": true, "sqlite": true, "merge": true, "loop": true, "input": true,
	"executable": true, "executablepool": true, "dictionary": true, "distributed": true,
	"buffer": true, "kafka": true, "rabbitmq": true, "nats": true, "embeddedrocksdb": true,
	"keepermap": true, "materializedpostgresql": true, "timeseries": true, "alias": true,
}

// reachingPrefixes extend reachingFunctions to families of names.
var reachingPrefixes = []string{"dict", "joinget", "s3", "gcs", "azure", "hdfs", "iceberg", "deltalake", "hudi", "paimon", "mergetreeindex", "mergetreeanalyze"}

// localEngines are the table engines a tenant may create: they keep data in the table itself.
var localEngines = map[string]bool{
	"memory": true, "null": true, "log": true, "tinylog": true, "stripelog": true, "set": true, "join": true,
}

// Confine reports whether sql, sent by a tenant's own admin key as operator SQL, stays inside
// the tenant's database db. It accepts one statement among SELECT/WITH, SHOW TABLES|CREATE|
// COLUMNS, DESCRIBE, EXISTS, EXPLAIN, INSERT, DELETE, TRUNCATE, OPTIMIZE, EXCHANGE, and
// CREATE/DROP/ALTER/RENAME of a TABLE or VIEW; tables named in it must be unqualified or
// qualified with db; its SELECT part (of a view, an INSERT … SELECT, a subquery) must read
// only tables the scanner is sure of, all in db; and it may use neither a table function or
// engine that reaches outside the table (remote, url, file, s3, merge, dictionaries, …) nor an
// engine other than the MergeTree family and the local ones (Memory, Log, …). The error wraps
// [ErrRejected] and says what to change.
//
// Like [Check] it is conservative: what it cannot vouch for is refused, and the operator key
// (which is not confined) remains the tool for anything else.
func Confine(sql, db string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRejected, fmt.Sprintf(format, args...))
	}
	toks, err := tokenize(sql)
	if err != nil {
		return refuse("%v", err)
	}
	stmt, err := single(toks)
	if err != nil {
		return refuse("%v", err)
	}
	first := leadingKeyword(stmt)
	if first < 0 {
		return refuse("not a statement")
	}
	kw := strings.ToUpper(stmt[first].text)
	objects, ok := confinedStatements[kw]
	if !ok {
		return refuse("%s is for the operator key; a tenant's admin key may create, alter, drop and read its own tables", kw)
	}
	if first+1 < len(stmt) && serverObjects[strings.ToUpper(stmt[first+1].text)] || objects != nil &&
		(first+1 >= len(stmt) || !objects[strings.ToUpper(stmt[first+1].text)]) {
		return refuse("%s of anything but a table or view is for the operator key", kw)
	}
	if kw == "SHOW" {
		if err := showConfined(stmt[first:], db); err != nil {
			return refuse("%v", err)
		}
	}
	sel := len(stmt)
	for i := first + 1; i < len(stmt); i++ {
		if stmt[i].is("SELECT") || stmt[i].is("WITH") {
			sel = i
			break
		}
	}
	if kw == "SELECT" || kw == "WITH" {
		sel = first
	}
	for i, t := range stmt {
		if t.isPunct("{") {
			return refuse("query parameters are not accepted in operator SQL")
		}
		if t.is("OUTFILE") || t.is("INFILE") {
			return refuse("INTO OUTFILE and FROM INFILE are not accepted")
		}
		if t.kind == tokWord && i+1 < len(stmt) && stmt[i+1].isPunct("(") && reaching(t.text) {
			return refuse("%s(…) reaches outside the tenant's tables", t.text)
		}
		if t.is("ENGINE") {
			if err := localEngine(stmt, i); err != nil {
				return refuse("%v", err)
			}
		}
		if i < sel && i+2 < len(stmt) && stmt[i+1].isPunct(".") {
			if name, ok := ident(t); ok {
				if _, ok := ident(stmt[i+2]); ok && name != db {
					return refuse("%s.%s is outside the tenant's database %s", name, stmt[i+2].text, db)
				}
			}
		}
	}
	if sel < len(stmt) {
		tables, sure := scanTables(stmt[sel:])
		if !sure {
			return refuse("the tables the SELECT part reads could not be determined; name them plainly")
		}
		for _, t := range tables {
			if t.Database != "" && t.Database != db {
				return refuse("%s is outside the tenant's database %s", t, db)
			}
		}
	}
	return nil
}

// reaching reports whether a function or engine name reaches outside the tenant's tables.
func reaching(name string) bool { return named(name, reachingFunctions, reachingPrefixes) }

// named reports whether the lower-cased name is in names or starts with one of prefixes.
func named(name string, names map[string]bool, prefixes []string) bool {
	n := strings.ToLower(name)
	if names[n] {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// localEngine checks the engine named after the ENGINE keyword at stmt[i].
func localEngine(stmt []token, i int) error {
	j := i + 1
	if j < len(stmt) && stmt[j].isPunct("=") {
		j++
	}
	if j >= len(stmt) {
		return fmt.Errorf("ENGINE without a name")
	}
	name, ok := ident(stmt[j])
	if !ok {
		return fmt.Errorf("ENGINE without a name")
	}
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "mergetree") || localEngines[n] {
		return nil
	}
	return fmt.Errorf("ENGINE = %s is for the operator key: a tenant may use the MergeTree family, Memory, Null, Log, TinyLog, StripeLog, Set and Join", name)
}

// showConfined checks the database a SHOW statement lists: SHOW TABLES FROM|IN names it first,
// SHOW COLUMNS (and the index forms) FROM|IN name the table first and the database second.
func showConfined(stmt []token, db string) error {
	skip := 0
	if !stmt[1].is("TABLES") {
		skip = 1 // the first FROM|IN names the table
	}
	for i := 1; i+1 < len(stmt); i++ {
		if !stmt[i].is("FROM") && !stmt[i].is("IN") {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if name, ok := ident(stmt[i+1]); ok && name != db {
			return fmt.Errorf("SHOW of database %s: a tenant's admin key sees only its database %s", name, db)
		}
	}
	return nil
}
