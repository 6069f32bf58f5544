// Package pipes serves named, parameterised read queries ("pipes") defined as SQL files.
//
// # Semantics
//
// A pipe is one file NAME.sql in a pipes directory; its name is the file name without ".sql".
// The file starts with a header of "--" comment lines holding directives, then one read-only
// statement whose values come from {name:Type} placeholders:
//
//	-- Top users of one day.
//	-- @param day Date required The day to report.
//	-- @param limit UInt32 default 10 How many users.
//	-- @ttl 30s
//	-- @tables events
//	SELECT user, count() AS n FROM events WHERE toDate(ts) = {day:Date}
//	GROUP BY user ORDER BY n DESC LIMIT {limit:UInt32}
//
// Directives: "@param NAME TYPE [required | default JSON] [description…]" declares a
// parameter (a ClickHouse type; a JSON default validated against it); "@ttl DURATION" sets the
// lifetime of the pipe's cached results; "@tables a,b" names the tables the pipe reads (else
// they are derived from the SQL like raw queries); "@description TEXT" describes the pipe (plain
// header comment lines do too). A parameter that is neither required nor defaulted must have a
// Nullable type and is NULL when omitted.
//
// [Load] reads a directory into an immutable [Set]; [Registry] holds the current set and swaps
// it atomically on reload, so requests in flight keep the set they started with. Every
// placeholder of the SQL must be declared with the same type, and every declared parameter
// must be used, so a typo fails at load rather than at query time.
//
// [Handler] serves GET|POST /v1/pipes/{name} and GET /v1/pipes. Parameter values come from the
// query string (text, read as the parameter's type) or a JSON body {"params": {…}}; each is
// validated against its declared type with package chtype before any SQL runs, then handed to
// the query service as a bound parameter — never spliced into the SQL text. The query service
// applies the read-only check, the limits and the result cache exactly as for /v1/query.
//
// # Errors
//
// Load reports every problem of every file at once (errors.Join), each naming the file and
// line. Requests are answered with JSON errors: 404 pipe.not_found, 400 pipe.missing_param,
// pipe.unknown_param, pipe.invalid_param (each naming the parameter) and
// pipe.invalid_request; query errors are those of package query (query.rejected,
// query.limit_exceeded, store.unavailable with Retry-After …).
//
// # Capabilities
//
// Parameters are bound by the store: natively by servers that bind {name:Type} themselves,
// as typed literals built from validated values on servers that cannot (ClickHouse 18.16).
// Types only modern servers have validate everywhere but fail at query time on old servers.
package pipes
