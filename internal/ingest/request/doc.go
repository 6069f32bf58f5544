// Package request turns one ingest request body into validated, canonically encoded rows: the
// pure core of POST /v1/ingest/{table}. The HTTP handler reads the table's columns, calls
// [Parse] and publishes the [Result]'s segments; nothing here does I/O beyond reading the body.
//
// # Semantics
//
// The Content-Type decides the body format: application/json is one JSON object or a JSON array
// of objects; application/x-ndjson, application/ndjson, application/jsonl, application/jsonlines
// and application/x-jsonlines are newline delimited JSON objects (blank lines allowed, the
// trailing newline optional). Media type parameters such as charset=utf-8 are ignored.
// Content-Encoding may be empty, identity, gzip or zstd. Rows are numbered from 0 in body order;
// the row number is the index of the value in the array or the stream, not a line number.
//
// text/csv and text/tab-separated-values are read with ClickHouse's CSV and TabSeparated rules
// (quoting and "" in CSV, backslash escapes in TSV, \N for NULL, an empty unquoted CSV field as
// the column's default, text literals for Array, Tuple and Map). The header parameter is
// present (the first record names the columns, any order and subset), absent (fields are the
// insertable columns in table order) or auto, the default: the first record is a header iff
// every field is a column name. The CSV delimiter parameter replaces the comma. Each field is
// turned into the JSON value it stands for and validated and encoded exactly like a JSON value,
// so text rows share JSON's defaults, codes and atomic/partial semantics. A CSV or TSV row is
// numbered from 0 without the header, and its errors also give the body line it starts on.
//
// Every row is checked against the table's columns. A valid row becomes one canonical row (a
// JSON array of chtype canonical values) over the columns it gives, in table order. An omitted
// Nullable column without a DEFAULT is written as null; an omitted column with a DEFAULT (or
// EPHEMERAL) stays omitted so the server computes it, which is why rows that omit different
// DEFAULT columns land in different segments. A null given for a column that has a DEFAULT but
// is not Nullable is treated as omitted, as ClickHouse does with input_format_null_as_default.
// A null given for a Nullable column is null. A row that gives no writable column at all is
// refused (empty_row), because an insert must name at least one column.
//
// By default a request is atomic: one invalid row makes Parse fail with a 400 listing the row
// errors, and nothing is accepted. With [Options.Partial] the valid rows are accepted and the
// invalid ones are reported. A row that is not a JSON object is a row error (not_an_object), so
// partial requests keep their other rows; malformed JSON anywhere fails the whole request,
// because row boundaries can no longer be trusted.
//
// Numbers keep their text: 64-bit (and wider) integers never pass through float64.
//
// # Errors
//
// Request-level failures are *httpx.Error values with a stable code: 415
// ingest.unsupported_media_type (also for a bad CSV or TSV parameter), 415
// ingest.unsupported_encoding, 400 ingest.corrupt_body, 400 ingest.body_read_failed, 413
// ingest.body_too_large (the limit applies to the compressed and to the decompressed size), 413
// ingest.too_many_rows, 400 ingest.empty_body, 400 ingest.malformed_json (naming the row and
// byte offset), 400 ingest.malformed_csv and ingest.malformed_tsv (an unclosed quote, data after
// a closing quote, a trailing backslash; naming the row, line and offset) and 400
// ingest.invalid_rows (atomic requests with invalid rows; Details is an InvalidRows with exact
// counts and the first MaxErrors row errors). Row errors carry the codes unknown_column,
// not_writable, missing_column, duplicate_column, not_an_object, empty_row, field_count (CSV and
// TSV) and every chtype value code (type_mismatch, out_of_range, invalid_value, too_long,
// null_not_allowed, unsupported_type).
//
// # Capabilities
//
// Parse is a pure function of its arguments and safe for concurrent use. It keeps internal
// scratch buffers in sync.Pools; the Result it returns owns its memory.
package request
