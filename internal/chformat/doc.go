// Package chformat reads and writes ClickHouse's binary data formats for the gateway's
// ClickHouse HTTP interface. The input side converts INSERT bodies in RowBinary,
// RowBinaryWithNamesAndTypes and Native to chtype's canonical JSON rows, so they enter the same
// validation and queue as every other ingest format.
//
// # Semantics
//
// [DecodeRowBinary], [DecodeNative] and [DecodeNativeFor] return [Decoded]: the column names and type strings, and
// one canonical JSON array per row, newline-terminated, in column order. A value's canonical form
// is the one chtype gives it (chtype's AppendCanonicalRowBinary reads every scalar, in RowBinary
// and in Native alike, since a scalar Native column is its values' RowBinary encodings one after
// another); this package adds only what is columnar in Native — null maps, array and map
// offsets, tuple element columns and LowCardinality dictionaries — and the RowBinary header.
//
// The Native decoder is written here rather than on ch-go's proto package: ch-go decodes into
// typed Go columns, which would then need converting to canonical JSON type by type, twice the
// code chtype already holds for scalars; the columnar structure is small.
//
// Native input is read at revision 0 (no BlockInfo, no serialization flags) as ClickHouse's own
// Native input format reads it and as clickhouse-go writes INSERT bodies over HTTP; a revision
// of 54454 or more reads blocks as ClickHouse writes them for such a client revision. [Revision]
// is the revision the gateway claims to clients.
//
// Native written at revision 0 — by ClickHouse itself (SELECT … FORMAT Native, INTO OUTFILE,
// clickhouse-client), not by clickhouse-go, which writes the table's types — names a
// DateTime('zone') column "DateTime": its values are instants, and [DecodeNative] renders them
// in UTC as the block's type says. A caller that knows the table's columns calls
// [DecodeNativeFor], which reads each column with the table's type (refusing any other type
// difference), so the canonical text is in the table's zone; rendered in UTC and then validated
// against the table's type, the same text would denote other instants. The ingest path uses
// DecodeNativeFor.
//
// # Errors
//
// Every error wraps [ErrMalformed] (data that ends inside a value or is not a value of its
// type), [ErrInvalidValue] (an enum value its type does not name, with the *chtype.Error naming
// it), [ErrUnsupportedType] (a column type the decoder cannot read, named with its column),
// [ErrHeaderMismatch] (a RowBinaryWithNamesAndTypes header that does not fit the expected
// columns) or [ErrTooLarge] (LowCardinality indexes repeating long keys far beyond the input's
// size). Bad data and invalid values are a *[RowError] giving the row's 0-based index and the column. No input
// makes a decoder panic, and nothing is sized by a count the remaining input cannot hold;
// FuzzDecodeNative and FuzzDecodeRowBinary hold them to that, and TestTruncatedAtEveryByte
// checks that every truncation is a RowError.
//
// # Capabilities
//
// Both formats: Int8…Int256, UInt8…UInt256, Float32/64, Bool, String, FixedString(N), Date,
// Date32, DateTime, DateTime('tz'), DateTime64(p[, tz]), UUID, IPv4, IPv6, Decimal(P, S),
// Enum8/16, Nullable, Array, Map, Tuple and LowCardinality of any of these. Native also reads
// Nothing (the type of NULL and of []). Not read: JSON/Object, Variant, Dynamic, geo and
// aggregate-function types, sparse serialization, and LowCardinality with a global dictionary
// (ClickHouse never writes one in Native).
package chformat
