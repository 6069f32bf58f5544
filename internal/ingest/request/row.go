package request

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/store"
)

// column is a store.Column reduced to what row validation asks of it on the hot path.
type column struct {
	name     string
	kind     store.DefaultKind
	typ      *chtype.Type
	writable bool
	nullable bool
	// hasDefault is set for writable columns the server fills when the insert omits them.
	hasDefault bool
	required   bool
}

// indexAbove is the column count above which a key that is not the column after the previous
// key is looked up in a map rather than by a linear scan.
const indexAbove = 24

// segment collects the rows that give the same set of columns.
type segment struct {
	sig   []uint64
	cols  []string
	types []string
	// spans holds start,end offsets of each row in the arena.
	spans []int
}

// rows validates the rows of one body and encodes them as RowBinary into one arena. It is pooled; reset prepares it for a call.
type rows struct {
	src bodyReader

	cols  []column
	vals  [][]byte
	stamp []uint32
	gen   uint32
	index map[string]int
	hint  int
	sig   []uint64

	out []byte
	// base is where the rows start in out: the bytes before it are room for the payload header.
	base int
	segs []segment
	last int

	// list holds the column indexes of Options.Columns in their order and listed marks them;
	// both are empty without a column list.
	list   []int
	listed []bool

	// line is the body line of the current CSV or TSV row, 0 for JSON.
	line int
	text textState

	// pol is the insert policy (nil: none); forced holds its forced value per column, canon
	// the canonical value each column got in the current row (nil: left to its default).
	pol    InsertPolicy
	forced [][]byte
	canon  [][]byte
	// polBuf holds the canonical values of the current row that canon points into.
	polBuf []byte

	maxErrors          int
	errs               []RowError
	errCount           int
	byCode             map[string]int
	rowErrs            int
	accepted, rejected int
}

func (p *rows) reset(cols []store.Column, maxErrors int) {
	p.cols = p.cols[:0]
	for _, c := range cols {
		t := c.Type
		if t == nil {
			t = &chtype.Type{Kind: chtype.Unsupported, Name: c.TypeName}
		}
		w := c.Writable()
		p.cols = append(p.cols, column{
			name: c.Name, kind: c.DefaultKind, typ: t, writable: w, nullable: t.IsNullable(),
			hasDefault: w && c.DefaultKind != store.DefaultNone, required: c.Required(),
		})
	}
	n := len(cols)
	p.vals = resize(p.vals, n)
	p.stamp = resize(p.stamp, n)
	clear(p.stamp)
	p.gen = 0
	p.index = nil
	if n > indexAbove {
		p.index = make(map[string]int, n)
		for i, c := range p.cols {
			if _, dup := p.index[c.name]; !dup {
				p.index[c.name] = i
			}
		}
	}
	p.sig = resize(p.sig, (n+63)/64)
	p.out = nil
	p.segs = p.segs[:0]
	p.src = bodyReader{}
	p.last = 0
	p.maxErrors = maxErrors
	p.line = 0
	p.list, p.listed = p.list[:0], p.listed[:0]
	p.text.reset()
	p.errs = nil
	p.errCount, p.rowErrs, p.accepted, p.rejected = 0, 0, 0, 0
	p.byCode = nil
}

// release drops references to caller memory before the value returns to its pool.
func (p *rows) release() {
	clear(p.vals)
	clear(p.cols)
	p.cols = p.cols[:0]
	for i := range p.segs {
		p.segs[i].cols, p.segs[i].types = nil, nil
	}
	p.segs = p.segs[:0]
	p.out, p.errs, p.index, p.byCode = nil, nil, nil, nil
	p.pol = nil
	clear(p.forced)
	clear(p.canon)
	p.src = bodyReader{}
	p.text.release()
}

// setPolicy installs an insert policy for the rows of the call (after reset).
func (p *rows) setPolicy(pol InsertPolicy) {
	p.pol = pol
	if pol == nil {
		return
	}
	p.forced = resize(p.forced, len(p.cols))
	p.canon = resize(p.canon, len(p.cols))
	for i, c := range p.cols {
		p.forced[i] = nil
		if v, ok := pol.Forced(c.name); ok {
			p.forced[i] = v
		}
	}
}

// checkPolicy refuses the current row when it gave a forced column another value or fails
// the policy's filter; canon holds its canonical values.
func (p *rows) checkPolicy(row int) {
	if p.rowErrs > 0 {
		return
	}
	ok := p.pol.Match(func(col string) (json.RawMessage, bool) {
		for i := range p.cols {
			if p.cols[i].name == col {
				return p.canon[i], p.canon[i] != nil
			}
		}
		return nil, false
	})
	if !ok {
		p.fail(row, policy.RowViolation, func() (string, string) {
			return "", "the row does not pass the token's row filter, so its role may not insert it"
		})
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// lookup returns the index of the column named by the raw key (without quotes), or -1.
func (p *rows) lookup(key []byte) int {
	if h := p.hint; h < len(p.cols) && p.cols[h].name == string(key) {
		p.hint = h + 1
		return h
	}
	if p.index != nil {
		if c, ok := p.index[string(key)]; ok {
			p.hint = c + 1
			return c
		}
		return -1
	}
	for c := range p.cols {
		if p.cols[c].name == string(key) {
			p.hint = c + 1
			return c
		}
	}
	return -1
}

// object validates the JSON object starting at b[i] == '{' as row number row and returns the
// index just past it.
func (p *rows) object(b []byte, i, row int) (int, *syntaxError) {
	p.beginRow()
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		p.finishRow(row)
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, unexpected(b, i, "a string key")
		}
		kend, esc, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		rawKey := b[i:kend]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, unexpected(b, i, "':'")
		}
		i = skipSpace(b, i+1)
		vend, err := scanValue(b, i, 1)
		if err != nil {
			return 0, err
		}
		key := rawKey[1 : len(rawKey)-1]
		if esc {
			// Rare: a key with escapes is decoded so "\u0069d" names column id.
			var s string
			if json.Unmarshal(rawKey, &s) == nil {
				key = []byte(s)
			}
		}
		p.field(row, key, b[i:vend])
		i = skipSpace(b, vend)
		if i >= len(b) {
			return 0, eofError(b)
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			p.finishRow(row)
			return i + 1, nil
		default:
			return 0, unexpected(b, i, "',' or '}'")
		}
	}
}

// beginRow starts a new row: no column is given yet and no error is counted.
func (p *rows) beginRow() {
	p.gen++
	if p.gen == 0 {
		clear(p.stamp)
		p.gen = 1
	}
	p.hint = 0
	p.rowErrs = 0
}

// field records the value of one key of the current row.
func (p *rows) field(row int, key, val []byte) {
	c := p.lookup(key)
	if c < 0 {
		p.unknownColumn(row, key)
		return
	}
	col := &p.cols[c]
	switch {
	case !p.inList(c):
		p.notListed(row, col)
	case !col.writable:
		p.notWritable(row, col)
	case p.stamp[c] == p.gen:
		p.duplicateColumn(row, col)
	default:
		p.stamp[c] = p.gen
		p.vals[c] = val
	}
}

func (p *rows) unknownColumn(row int, key []byte) {
	p.fail(row, RowUnknownColumn, func() (string, string) {
		name := excerptBytes(key, 64)
		return name, fmt.Sprintf("column %q does not exist in the table", name)
	})
}

// inList reports whether column c may be given: always without a column list.
func (p *rows) inList(c int) bool { return len(p.listed) == 0 || p.listed[c] }

func (p *rows) notListed(row int, col *column) {
	p.fail(row, RowUnknownColumn, func() (string, string) {
		return col.name, fmt.Sprintf("column %q is not in the INSERT's column list", col.name)
	})
}

// setColumns installs the column list of Options.Columns, refusing a name that is not an
// insertable column of the table or that repeats.
func (p *rows) setColumns(names []string) *httpx.Error {
	if names == nil {
		return nil
	}
	p.listed = resize(p.listed, len(p.cols))
	clear(p.listed)
	var bad []string
	for _, n := range names {
		c := p.lookup([]byte(n))
		switch {
		case c < 0:
			bad = append(bad, fmt.Sprintf("column %q does not exist in the table", excerpt(n, 64)))
		case !p.cols[c].writable:
			bad = append(bad, fmt.Sprintf("column %q is %s and cannot be inserted", n, p.cols[c].kind))
		case p.listed[c]:
			bad = append(bad, fmt.Sprintf("column %q is listed more than once", n))
		default:
			p.listed[c] = true
			p.list = append(p.list, c)
		}
	}
	p.hint = 0
	if len(bad) > 0 {
		return invalidColumns(bad)
	}
	if len(names) == 0 {
		return invalidColumns([]string{"the column list is empty"})
	}
	return nil
}

func (p *rows) notWritable(row int, col *column) {
	p.fail(row, RowNotWritable, func() (string, string) {
		return col.name, fmt.Sprintf("column %q is %s and cannot be inserted", col.name, col.kind)
	})
}

func (p *rows) duplicateColumn(row int, col *column) {
	p.fail(row, RowDuplicateColumn, func() (string, string) {
		return col.name, fmt.Sprintf("column %q appears more than once in the row", col.name)
	})
}

// null is the value written for an omitted Nullable column; it is only ever read.
var null = []byte("null")

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

// finishRow encodes the current row in table order as RowBinary, or records why it is refused.
func (p *rows) finishRow(row int) {
	start := len(p.out)
	clear(p.sig)
	p.polBuf = p.polBuf[:0]
	n := 0
	for c := range p.cols {
		col := &p.cols[c]
		if !col.writable {
			continue
		}
		var v []byte
		given := p.stamp[c] == p.gen
		var forced []byte
		if p.pol != nil {
			p.canon[c] = nil
			forced = p.forced[c]
		}
		if forced != nil && !given {
			v, given = forced, true
		} else if given {
			v = p.vals[c]
			if v == nil {
				// The text decoder already refused the value and reported why.
				continue
			}
			if !col.nullable && col.hasDefault && isNull(v) {
				given = false
			}
		}
		if !given {
			if col.required {
				p.fail(row, RowMissingColumn, func() (string, string) {
					return col.name, fmt.Sprintf("column %q (%s) is required: it is not Nullable and has no DEFAULT", col.name, col.typ.Name)
				})
				continue
			}
			if col.hasDefault {
				continue
			}
			v = null
		}
		// The value is validated and encoded in one step, straight into RowBinary (ADR 0013).
		out, err := col.typ.AppendRowBinary(p.out, v)
		if err != nil {
			p.valueError(row, col, v, err)
			continue
		}
		if p.pol != nil {
			// Policies compare canonical values; the canonical form is computed only here,
			// on the path of a token with an insert policy. v was just validated.
			start := len(p.polBuf)
			p.polBuf, _ = col.typ.AppendCanonical(p.polBuf, v)
			val := p.polBuf[start:len(p.polBuf):len(p.polBuf)]
			if forced != nil && string(val) != string(forced) {
				p.fail(row, policy.RowForcedColumn, func() (string, string) {
					return col.name, fmt.Sprintf("column %q is set from the token (%s); omit it or send that value", col.name, forced)
				})
				continue
			}
			p.canon[c] = val
		}
		p.out = out
		p.sig[c>>6] |= 1 << (c & 63)
		n++
	}
	if p.pol != nil {
		p.checkPolicy(row)
	}
	if p.rowErrs == 0 && n == 0 {
		p.fail(row, RowEmpty, func() (string, string) {
			return "", "the row gives no insertable column; an insert must name at least one"
		})
	}
	if p.rowErrs > 0 {
		p.out = p.out[:start]
		p.rejected++
		return
	}
	p.accepted++
	p.addRow(start, len(p.out))
}

// notObject records a row that is a JSON value other than an object.
func (p *rows) notObject(row int, raw []byte) {
	p.rowErrs = 0
	p.fail(row, RowNotAnObject, func() (string, string) {
		return "", "the row is not a JSON object: " + excerptBytes(raw, 40)
	})
	p.rejected++
}

// addRow files the arena span [start,end) under the segment of the current column set.
func (p *rows) addRow(start, end int) {
	if p.last < len(p.segs) && sameSig(p.segs[p.last].sig, p.sig) {
		p.segs[p.last].spans = append(p.segs[p.last].spans, start, end)
		return
	}
	for i := range p.segs {
		if sameSig(p.segs[i].sig, p.sig) {
			p.last = i
			p.segs[i].spans = append(p.segs[i].spans, start, end)
			return
		}
	}
	// A new segment reuses the scratch slices of an earlier call's segment when there is one;
	// only the column list is handed out with the result, so it is always new.
	if len(p.segs) < cap(p.segs) {
		p.segs = p.segs[:len(p.segs)+1]
	} else {
		p.segs = append(p.segs, segment{})
	}
	p.last = len(p.segs) - 1
	s := &p.segs[p.last]
	s.sig = append(s.sig[:0], p.sig...)
	s.spans = append(s.spans[:0], start, end)
	n := 0
	for c := range p.cols {
		if p.sig[c>>6]&(1<<(c&63)) != 0 {
			n++
		}
	}
	s.cols = make([]string, 0, n)
	s.types = make([]string, 0, n)
	for c := range p.cols {
		if p.sig[c>>6]&(1<<(c&63)) != 0 {
			s.cols = append(s.cols, p.cols[c].name)
			s.types = append(s.types, p.cols[c].typ.Name)
		}
	}
}

func sameSig(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fail counts one row error and keeps it when fewer than maxErrors are kept. describe builds
// the column name and message only when the error is kept.
func (p *rows) fail(row int, code string, describe func() (string, string)) {
	p.rowErrs++
	p.errCount++
	if p.byCode == nil {
		p.byCode = make(map[string]int)
	}
	p.byCode[code]++
	if len(p.errs) >= p.maxErrors {
		return
	}
	colName, msg := describe()
	p.errs = append(p.errs, RowError{Row: row, Line: p.line, Column: colName, Code: code, Message: msg})
}

// valueError records a value chtype refused, naming the column and an excerpt of the value.
func (p *rows) valueError(row int, col *column, v []byte, err error) {
	code := string(chtype.CodeInvalidValue)
	var ce *chtype.Error
	if errors.As(err, &ce) {
		code = string(ce.Code)
	}
	p.fail(row, code, func() (string, string) {
		msg := err.Error()
		if ce != nil {
			msg = ce.Message
			if ce.Path != "" {
				msg = "at " + ce.Path + ": " + msg
			}
		}
		m := fmt.Sprintf("column %q (%s): %s", col.name, col.typ.Name, msg)
		if ex := excerptBytes(v, 40); !strings.Contains(msg, strings.Trim(ex, `"`)) {
			m += "; value " + ex
		}
		return col.name, m
	})
}
