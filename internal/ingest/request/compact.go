package request

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// This file reads ClickHouse's JSONCompactEachRow family: one JSON array per row, its values
// in the order of the header (…WithNames), of the INSERT's column list, or of the table's
// insertable columns. Each value is validated and encoded exactly like the same value in a JSON
// object row.

// splitCompact walks a body of JSON array rows, handing each to p, and returns the row count.
func (p *rows) splitCompact(f bodyFormat, b []byte, maxRows int) (int, *httpx.Error) {
	t := &p.text
	i := skipSpace(b, 0)
	if i >= len(b) {
		return 0, nil
	}
	if f.header == headerPresent {
		names, end, herr := compactHeader(b, i, "names")
		if herr != nil {
			return 0, herr
		}
		t.names = names
		p.mapHeader()
		i = skipSpace(b, end)
		if f.types {
			types, end, herr := compactHeader(b, i, "types")
			if herr != nil {
				return 0, herr
			}
			if herr := p.checkTypes(types); herr != nil {
				return 0, herr
			}
			i = skipSpace(b, end)
		}
	} else {
		p.mapTable()
	}
	n := 0
	for i < len(b) {
		if n == maxRows {
			return 0, tooManyRows(maxRows)
		}
		end, herr := p.compactRow(b, i, n)
		if herr != nil {
			return 0, herr
		}
		n++
		for end < len(b) && (b[end] == ' ' || b[end] == '\t' || b[end] == '\r') {
			end++
		}
		if end < len(b) && b[end] != '\n' {
			return 0, malformed(n-1, end, "unexpected "+describe(b[end])+" after the row, want a newline")
		}
		i = skipSpace(b, end)
	}
	return n, nil
}

// compactHeader reads the names or types record of a JSONCompactEachRowWith… body: a JSON array
// of strings.
func compactHeader(b []byte, i int, what string) ([][]byte, int, *httpx.Error) {
	if i >= len(b) {
		return nil, i, malformedHeader(fmt.Sprintf("the body ends before its %s record", what))
	}
	end, serr := scanValue(b, i, 0)
	if serr != nil {
		return nil, 0, malformed(0, serr.off, serr.msg)
	}
	var names []string
	if err := json.Unmarshal(b[i:end], &names); err != nil {
		return nil, 0, malformedHeader(fmt.Sprintf("the %s record must be a JSON array of strings, got %s", what, excerptBytes(b[i:end], 40)))
	}
	out := make([][]byte, len(names))
	for k, n := range names {
		out[k] = []byte(n)
	}
	return out, end, nil
}

// compactRow validates the JSON array at b[i] as row number row and returns the index past it.
func (p *rows) compactRow(b []byte, i, row int) (int, *httpx.Error) {
	t := &p.text
	if i >= len(b) || b[i] != '[' {
		end, serr := scanValue(b, i, 0)
		if serr != nil {
			return 0, malformed(row, serr.off, serr.msg)
		}
		p.rowErrs = 0
		p.fail(row, RowNotAnArray, func() (string, string) {
			return "", "the row is not a JSON array: " + excerptBytes(b[i:end], 40)
		})
		p.rejected++
		return end, nil
	}
	t.fields = t.fields[:0]
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == ']' {
		j++
	} else {
		for {
			end, serr := scanValue(b, j, 1)
			if serr != nil {
				return 0, malformed(row, serr.off, serr.msg)
			}
			t.fields = append(t.fields, textField{start: j, end: end})
			j = skipSpace(b, end)
			if j >= len(b) {
				return 0, malformed(row, len(b), "unexpected end of input, want ',' or ']'")
			}
			if b[j] == ']' {
				j++
				break
			}
			if b[j] != ',' {
				return 0, malformed(row, j, "unexpected "+describe(b[j])+", want ',' or ']'")
			}
			j = skipSpace(b, j+1)
		}
	}
	p.beginRow()
	if len(t.fields) != len(t.cols) {
		p.fail(row, RowFieldCount, func() (string, string) {
			if t.header {
				return "", fmt.Sprintf("the row has %d values, the names record has %d", len(t.fields), len(t.cols))
			}
			return "", fmt.Sprintf("the row has %d values, the insert gives %d columns", len(t.fields), len(t.cols))
		})
		p.rejected++
		return j, nil
	}
	for k, f := range t.fields {
		c := t.cols[k]
		switch t.bad[k] {
		case hdrUnknown:
			p.unknownColumn(row, t.names[k])
			continue
		case hdrNotWritable:
			p.notWritable(row, &p.cols[c])
			continue
		case hdrDuplicate:
			p.duplicateColumn(row, &p.cols[c])
			continue
		case hdrNotListed:
			p.notListed(row, &p.cols[c])
			continue
		}
		p.stamp[c] = p.gen
		p.vals[c] = b[f.start:f.end]
	}
	p.finishRow(row)
	return j, nil
}

// checkTypes compares the types record of a …WithNamesAndTypes body with the table's types of
// the columns the header names; every difference is reported at once.
func (p *rows) checkTypes(types [][]byte) *httpx.Error {
	t := &p.text
	if len(types) != len(t.cols) {
		return typesMismatch([]string{fmt.Sprintf("the types record has %d fields, the names record %d", len(types), len(t.cols))})
	}
	var bad []string
	for k, c := range t.cols {
		if t.bad[k] != hdrOK {
			continue // reported on every row
		}
		col := &p.cols[c]
		if normType(string(types[k])) != normType(col.typ.Name) {
			bad = append(bad, fmt.Sprintf("column %q: the body says %s, the table has %s", col.name, excerptBytes(types[k], 64), col.typ.Name))
		}
	}
	if len(bad) > 0 {
		return typesMismatch(bad)
	}
	return nil
}

// normType drops the spaces of a type name outside quotes, so "Decimal(10, 2)" and
// "Decimal(10,2)" compare equal.
func normType(s string) string {
	if !strings.ContainsAny(s, " \t") {
		return s
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' && (i == 0 || s[i-1] != '\\'):
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t'):
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
