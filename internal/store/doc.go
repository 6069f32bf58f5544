// Package store is the contract of WaveHouse's data layer: ClickHouse, reached either as a
// server over the native protocol (store/clickhousestore) or as the engine embedded in the
// process (store/chdbstore). It holds interfaces, value types and sentinel errors only and
// imports no ClickHouse SDK.
//
// # Semantics
//
// Every call names a [Target]: the tenant and the ClickHouse database it owns. A backend may
// keep a connection pool per tenant; the database is always given explicitly and table names
// are always qualified, so a call never depends on a connection's current database.
//
// [SchemaReader.Columns] returns a table's columns in table order, read from system.columns, with
// the parsed [chtype.Type], the default kind and expression, and two derived flags: Writable
// (not MATERIALIZED or ALIAS) and Required (writable, not Nullable and without DEFAULT).
//
// [Inserter.Insert] writes one [Batch] of canonical rows (JSON arrays in the batch's column
// order, see package chtype) as one insert statement with an explicit column list. A batch is
// all or nothing as far as the caller can tell: on error no row of it is visible to queries.
// Insert does not retry; the caller owns retry and bisection (ErrRejected names the row when
// the backend can tell which row failed).
//
// [Querier.Query] runs one SQL statement under [Limits] and returns a [Rows] that streams
// canonical JSON rows; results are never buffered whole. The context bounds the whole read:
// cancelling it stops the query and Next returns false with the context's error. Parameters
// written {name:Type} in the SQL are bound from [Param] values, natively where the server
// supports it, else as escaped literals on the client; a parameter value is always data, never
// SQL. Limits.ReadOnly is enforced by the server's readonly setting, not by parsing.
//
// [Execer.Exec] runs a statement that returns no rows (DDL, ALTER, operator SQL). It is not an
// insert path: inserts go through Insert.
//
// All methods are safe for concurrent use. Slices passed in are not retained after the call
// returns, except that Rows.Row's result is valid only until the next call to Next. After Close
// every method returns ErrClosed.
//
// # Errors
//
// Backends translate engine errors to the sentinels below with %w, keeping the cause
// (an *[Exception] with the ClickHouse error code when there is one):
//
//   - ErrUnavailable: the server cannot be reached or the engine cannot be loaded; transient.
//   - ErrTimeout: an insert or a network read timed out; transient.
//   - ErrOverloaded: too many parts, memory limit, too many simultaneous queries; transient.
//   - ErrUnknownDatabase, ErrUnknownTable, ErrUnknownColumn: permanent until the schema changes;
//     a caller that cached a schema should invalidate it.
//   - ErrRejected: the statement or data was refused (syntax, type or parse error, bad value,
//     readonly violation); permanent. A *[RowError] inside names the row and column when known.
//   - ErrLimitExceeded: a query hit a limit from Limits (rows, bytes, time, memory); permanent.
//   - ErrClosed: the store was closed.
//
// Context cancellation stays recognisable with errors.Is(err, context.Canceled) or
// context.DeadlineExceeded. [Classify] and [IsTransient] tell retryable failures from
// permanent ones for the ingest worker.
//
// # Capabilities
//
// Backends differ in what the engine behind them supports. A ClickHouse 18.16 server has no
// DateTime64, Map, Bool, JSON, IPv4/IPv6, Int128 or native {name:Type} parameters; chDB (26.x)
// has them all. Such differences are reported by [Capabilities] from a backend's Capabilities
// method (see the storetest suite's Caps), never by methods that return "unimplemented".
package store
