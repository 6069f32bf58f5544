// Package chtype is the ClickHouse type system as WaveHouse sees it: it parses the type strings
// found in system.columns, validates raw JSON values against a type, and produces each value's
// canonical JSON encoding.
//
// # Semantics
//
// A canonical value is the JSON text that ClickHouse's JSONCompactEachRow (and JSONEachRow)
// input formats accept for that column type, normalised so that equal values have equal bytes:
// integers as bare JSON numbers with full 64-bit (and 128/256-bit) precision, floats in Go's
// shortest round-trip form, decimals with exactly the column's scale, strings re-escaped
// minimally, dates as "YYYY-MM-DD", DateTime as "YYYY-MM-DD hh:mm:ss" and DateTime64 as
// "YYYY-MM-DD hh:mm:ss.fff" (precision digits) in the column's time zone or UTC when the column
// names none, enums by name, UUIDs in lower-case 8-4-4-4-12 form, tuples as arrays and maps as
// objects. A canonical row is a JSON array of canonical values in the column order of its
// batch, so the embedded engine can insert canonical rows verbatim.
//
// Input is taken as raw JSON value bytes from a decoder that keeps numbers as text, so 64-bit
// integers never pass through float64. Integers and floats are also accepted as JSON strings
// ("123"), as ClickHouse does. Dates and times accept RFC 3339 (any offset, converted), the
// ClickHouse text forms, and unix seconds (a number, or a decimal for DateTime64).
//
// [Type.ToDriver] turns a canonical value into the Go value clickhouse-go's batch Append wants
// for the column type, and [Type.AppendDriver] turns a value scanned by clickhouse-go back into
// canonical JSON, so both store backends produce byte-identical query rows.
//
// [ArrayScanner], [SkipValue], [AppendUnquote] and [IsNumber] are the allocation-free JSON
// primitives this package validates with, exported so a store backend can decode canonical rows
// in place with exactly the same notion of an element, a string and a number.
//
// # Errors
//
// Parse fails only on malformed type text; a well-formed but unknown type (AggregateFunction,
// Nested, Variant, geo types…) parses to [Unsupported], whose values are refused with the code
// "unsupported_type". Per-value problems are *[Error] values with a stable [Code]
// (type_mismatch, out_of_range, invalid_value, too_long, null_not_allowed, unsupported_type), a
// human message, and a path for nested values ("[2]", ".key"). No input makes this package
// panic; FuzzValidate and FuzzToDriver hold it to that, and FuzzArrayScanner and
// FuzzAppendUnquote hold the JSON primitives to encoding/json.
//
// # Capabilities
//
// Types only modern servers have (DateTime64, Date32, Bool, IPv4/IPv6, Int128/256, Map, JSON)
// parse and validate everywhere; whether a server can store them is the store's business.
package chtype
