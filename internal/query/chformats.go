package query

import (
	"sort"
	"strconv"
	"strings"
)

// chKind is an output format of the ClickHouse HTTP interface.
type chKind uint8

const (
	chTSV chKind = iota + 1
	chTSVWithNames
	chTSVWithNamesAndTypes
	chCSV
	chCSVWithNames
	chCSVWithNamesAndTypes
	chJSON
	chJSONCompact
	chJSONEachRow
	chJSONCompactEachRow
	chJSONCompactEachRowWithNames
	chJSONCompactEachRowWithNamesAndTypes
	chRowBinary
	chRowBinaryWithNames
	chRowBinaryWithNamesAndTypes
	chNative
)

// chFormatInfo describes one ClickHouse output format.
type chFormatInfo struct {
	name        string // the name ClickHouse reports in X-ClickHouse-Format
	contentType string
}

var chFormatInfos = map[chKind]chFormatInfo{
	chTSV:                                 {"TabSeparated", "text/tab-separated-values; charset=UTF-8"},
	chTSVWithNames:                        {"TabSeparatedWithNames", "text/tab-separated-values; charset=UTF-8"},
	chTSVWithNamesAndTypes:                {"TabSeparatedWithNamesAndTypes", "text/tab-separated-values; charset=UTF-8"},
	chCSV:                                 {"CSV", "text/csv; charset=UTF-8; header=absent"},
	chCSVWithNames:                        {"CSVWithNames", "text/csv; charset=UTF-8; header=present"},
	chCSVWithNamesAndTypes:                {"CSVWithNamesAndTypes", "text/csv; charset=UTF-8; header=present"},
	chJSON:                                {"JSON", "application/json; charset=UTF-8"},
	chJSONCompact:                         {"JSONCompact", "application/json; charset=UTF-8"},
	chJSONEachRow:                         {"JSONEachRow", "application/x-ndjson; charset=UTF-8"},
	chJSONCompactEachRow:                  {"JSONCompactEachRow", "application/json; charset=UTF-8"},
	chJSONCompactEachRowWithNames:         {"JSONCompactEachRowWithNames", "application/json; charset=UTF-8"},
	chJSONCompactEachRowWithNamesAndTypes: {"JSONCompactEachRowWithNamesAndTypes", "application/json; charset=UTF-8"},
	chRowBinary:                           {"RowBinary", "application/octet-stream"},
	chRowBinaryWithNames:                  {"RowBinaryWithNames", "application/octet-stream"},
	chRowBinaryWithNamesAndTypes:          {"RowBinaryWithNamesAndTypes", "application/octet-stream"},
	chNative:                              {"Native", "application/octet-stream"},
}

// chFormatNames maps every name a query may use (ClickHouse's names and aliases, spelt as
// ClickHouse spells them: format names are case-sensitive) to its format.
var chFormatNames = map[string]chKind{
	"TabSeparated": chTSV, "TSV": chTSV,
	"TabSeparatedWithNames": chTSVWithNames, "TSVWithNames": chTSVWithNames,
	"TabSeparatedWithNamesAndTypes": chTSVWithNamesAndTypes, "TSVWithNamesAndTypes": chTSVWithNamesAndTypes,
	"CSV": chCSV, "CSVWithNames": chCSVWithNames, "CSVWithNamesAndTypes": chCSVWithNamesAndTypes,
	"JSON": chJSON, "JSONCompact": chJSONCompact, "JSONEachRow": chJSONEachRow, "JSONLines": chJSONEachRow, "NDJSON": chJSONEachRow,
	"JSONCompactEachRow": chJSONCompactEachRow, "JSONCompactEachRowWithNames": chJSONCompactEachRowWithNames,
	"JSONCompactEachRowWithNamesAndTypes": chJSONCompactEachRowWithNamesAndTypes,
	"RowBinary":                           chRowBinary, "RowBinaryWithNames": chRowBinaryWithNames, "RowBinaryWithNamesAndTypes": chRowBinaryWithNamesAndTypes,
	"Native": chNative,
}

// chFormatList is the supported format names, for the error that refuses another one.
func chFormatList() string {
	names := make([]string, 0, len(chFormatNames))
	for n := range chFormatNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// chFormat is a ClickHouse output format with the settings that change its bytes. It travels
// in Request.Format as its string form (String), which is also what the cache key folds in.
type chFormat struct {
	kind chKind
	// quote64 is output_format_json_quote_64bit_integers (JSON formats).
	quote64 bool
	// revision is the protocol revision of Native output (client_protocol_version, capped at
	// the gateway's).
	revision uint64
}

// chFormatPrefix starts the Format of a ClickHouse output format; no /v1/query format does.
const chFormatPrefix = "clickhouse:"

// String returns the Format text of f: "clickhouse:<Name>", with ";q64=0" for unquoted 64-bit
// integers and ";rev=N" for a Native revision.
func (f chFormat) String() string {
	s := chFormatPrefix + chFormatInfos[f.kind].name
	if f.isJSON() && !f.quote64 {
		s += ";q64=0"
	}
	if f.kind == chNative && f.revision > 0 {
		s += ";rev=" + strconv.FormatUint(f.revision, 10)
	}
	return s
}

func (f chFormat) isJSON() bool {
	switch f.kind {
	case chJSON, chJSONCompact, chJSONEachRow, chJSONCompactEachRow, chJSONCompactEachRowWithNames, chJSONCompactEachRowWithNamesAndTypes:
		return true
	}
	return false
}

// parseChFormat reads a Format made by chFormat.String; ok is false for any other Format.
func parseChFormat(s Format) (chFormat, bool) {
	rest, ok := strings.CutPrefix(string(s), chFormatPrefix)
	if !ok {
		return chFormat{}, false
	}
	name, opts, _ := strings.Cut(rest, ";")
	kind, ok := chFormatNames[name]
	if !ok {
		return chFormat{}, false
	}
	f := chFormat{kind: kind, quote64: true}
	for opts != "" {
		var opt string
		opt, opts, _ = strings.Cut(opts, ";")
		switch k, v, _ := strings.Cut(opt, "="); k {
		case "q64":
			f.quote64 = v != "0"
		case "rev":
			f.revision, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return f, true
}
