package request

import (
	"io"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Format is a body layout: what a Content-Type (MediaType) or a ClickHouse format name
// (ClickHouseFormat) selects. The zero Format is not valid.
type Format struct {
	f bodyFormat
}

// Valid reports whether f was returned by MediaType or ClickHouseFormat.
func (f Format) Valid() bool { return f.f.kind != 0 }

// MediaType returns the Format a Content-Type selects, or the 415 ingest.unsupported_media_type
// Parse answers for it.
func MediaType(contentType string) (Format, *httpx.Error) {
	f, herr := parseMediaType(contentType)
	return Format{f}, herr
}

// clickHouseFormats are the ClickHouse input formats the gateway reads, by name (with ClickHouse's
// aliases). ClickHouse's CSV and TabSeparated have no header; the WithNames variants have one, and
// the WithNamesAndTypes variants a second record of type names, checked against the table.
var clickHouseFormats = map[string]bodyFormat{
	"JSONEachRow":                         {kind: formatNDJSON},
	"JSONLines":                           {kind: formatNDJSON},
	"NDJSON":                              {kind: formatNDJSON},
	"JSONCompactEachRow":                  {kind: formatJSONCompact, header: headerAbsent},
	"JSONCompactEachRowWithNames":         {kind: formatJSONCompact, header: headerPresent},
	"JSONCompactEachRowWithNamesAndTypes": {kind: formatJSONCompact, header: headerPresent, types: true},
	"CSV":                                 {kind: formatCSV, header: headerAbsent, sep: ','},
	"CSVWithNames":                        {kind: formatCSV, header: headerPresent, sep: ','},
	"CSVWithNamesAndTypes":                {kind: formatCSV, header: headerPresent, sep: ',', types: true},
	"TabSeparated":                        {kind: formatTSV, header: headerAbsent, sep: '\t'},
	"TSV":                                 {kind: formatTSV, header: headerAbsent, sep: '\t'},
	"TabSeparatedWithNames":               {kind: formatTSV, header: headerPresent, sep: '\t'},
	"TSVWithNames":                        {kind: formatTSV, header: headerPresent, sep: '\t'},
	"TabSeparatedWithNamesAndTypes":       {kind: formatTSV, header: headerPresent, sep: '\t', types: true},
	"TSVWithNamesAndTypes":                {kind: formatTSV, header: headerPresent, sep: '\t', types: true},
}

// ClickHouseFormat returns the Format of a ClickHouse input format name (case-insensitive), false
// for a format the gateway does not read.
func ClickHouseFormat(name string) (Format, bool) {
	if f, ok := clickHouseFormats[name]; ok {
		return Format{f}, true
	}
	for n, f := range clickHouseFormats {
		if strings.EqualFold(n, name) {
			return Format{f}, true
		}
	}
	return Format{}, false
}

// ClickHouseFormats returns the ClickHouse input format names ClickHouseFormat knows, sorted as
// documented: JSON formats, then CSV, then TabSeparated.
func ClickHouseFormats() []string {
	return []string{
		"JSONEachRow", "JSONLines", "NDJSON", "JSONCompactEachRow", "JSONCompactEachRowWithNames",
		"JSONCompactEachRowWithNamesAndTypes", "CSV", "CSVWithNames", "CSVWithNamesAndTypes",
		"TabSeparated", "TSV", "TabSeparatedWithNames", "TSVWithNames", "TabSeparatedWithNamesAndTypes",
		"TSVWithNamesAndTypes",
	}
}

// Parse reads one ingest request body of the Format contentType selects; see ParseFormat.
func Parse(contentType, contentEncoding string, body io.Reader, cols []store.Column, lim Limits, opt Options) (Result, *httpx.Error) {
	f, herr := parseMediaType(contentType)
	if herr != nil {
		return Result{}, herr
	}
	return parseBody(f, contentEncoding, body, nil, cols, lim, opt)
}

// ParseBytes is Parse of a body already in memory, as [ReadRaw] returns it: an uncompressed
// body is read where it is, without a copy.
func ParseBytes(contentType, contentEncoding string, body []byte, cols []store.Column, lim Limits, opt Options) (Result, *httpx.Error) {
	f, herr := parseMediaType(contentType)
	if herr != nil {
		return Result{}, herr
	}
	return parseBody(f, contentEncoding, nil, body, cols, lim, opt)
}

// ParseFormat reads one ingest request body in format f and validates every row against cols,
// the table's columns in table order. On success it returns the accepted rows encoded as payload
// segments and, with opt.Partial, the rejected rows' errors. Without opt.Partial any invalid row
// makes it return a 400 ingest.invalid_rows error listing the row errors, and nothing is
// accepted. Every other failure is a 4xx *httpx.Error described in the package documentation.
// It reads body until EOF, a read error or one byte past the limit; it does not close it.
func ParseFormat(f Format, contentEncoding string, body io.Reader, cols []store.Column, lim Limits, opt Options) (Result, *httpx.Error) {
	if !f.Valid() {
		return Result{}, unsupportedMediaType("")
	}
	return parseBody(f.f, contentEncoding, body, nil, cols, lim, opt)
}

// ParseFormatBytes is ParseFormat of a body already in memory; see [ParseBytes].
func ParseFormatBytes(f Format, contentEncoding string, body []byte, cols []store.Column, lim Limits, opt Options) (Result, *httpx.Error) {
	if !f.Valid() {
		return Result{}, unsupportedMediaType("")
	}
	return parseBody(f.f, contentEncoding, nil, body, cols, lim, opt)
}
