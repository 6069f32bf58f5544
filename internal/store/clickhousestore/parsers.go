package clickhousestore

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// parser converts canonical values of one scalar type into the Go value the driver wants for
// its column. It accepts, refuses and yields exactly what chtype's ToDriver does (columns_test
// and FuzzBuilders hold it to that), only faster.
type parser[T any] struct {
	// fast reads the value starting at row[i] when it is in the form canonical rows use, in
	// the same pass that finds its end, and returns the index just past it; ok is false for
	// anything else. It may be nil.
	fast func(row []byte, i int) (v T, end int, ok bool)
	// slow converts one whole value (no surrounding whitespace).
	slow func(e []byte) (T, error)
}

// take converts the value starting at row[i] (no leading whitespace) and returns the index just
// past it, where chtype.SkipValue would put it. end < 0 means no value starts at row[i] (the row
// is malformed there); err is a conversion failure, a *chtype.Error.
func (p parser[T]) take(row []byte, i int) (v T, end int, err error) {
	if i >= len(row) {
		return v, -1, nil
	}
	if p.fast != nil {
		if v, end, ok := p.fast(row, i); ok {
			return v, end, nil
		}
	}
	j := chtype.SkipValue(row, i)
	if j < 0 || j == i {
		return v, -1, nil
	}
	v, err = p.slow(row[i:j])
	return v, j, err
}

// delim reports whether a bare token ends at row[k], as chtype.SkipValue decides.
func delim(row []byte, k int) bool {
	if k >= len(row) {
		return true
	}
	switch row[k] {
	case ',', ']', '}', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}

// viaDriver converts with ToDriver and asserts the Go type.
func viaDriver[T any](t *chtype.Type, e []byte) (T, error) {
	var zero T
	v, err := t.ToDriver(e)
	if err != nil {
		return zero, err
	}
	out, ok := v.(T)
	if !ok {
		return zero, &chtype.Error{Code: chtype.CodeTypeMismatch, Message: fmt.Sprintf("%T for %s", v, t.Name)}
	}
	return out, nil
}

// bstr views b as a string without copying.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// arena holds the decoded text of escaped strings of one batch. It only grows while a batch is
// decoded, so strings viewing it stay valid until the batch is flushed.
type arena struct{ buf []byte }

// stringParser reads JSON strings. With view set, an unescaped string is a view of the row
// bytes and an escaped one is decoded into ar, so a batch allocates no strings of its own: this
// is safe only for columns that copy each value into their own buffer on Append (String,
// Nullable(String), Array(String)) and only while the rows are unchanged, which holds from
// decode to the end of flush inside one Insert. LowCardinality columns keep values as
// dictionary keys, so they get copies.
func stringParser(t *chtype.Type, view bool, ar *arena) parser[string] {
	str := func(b []byte) string {
		if view {
			return bstr(b)
		}
		return string(b)
	}
	fast := func(row []byte, i int) (string, int, bool) {
		if row[i] != '"' {
			return "", 0, false
		}
		for k := i + 1; k < len(row); k++ {
			switch c := row[k]; {
			case c == '"':
				return str(row[i+1 : k]), k + 1, true
			case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
				return "", 0, false
			}
		}
		return "", 0, false
	}
	slow := func(e []byte) (string, error) {
		if len(e) >= 2 && e[0] == '"' && e[len(e)-1] == '"' {
			inner := e[1 : len(e)-1]
			if plainText(inner) {
				return str(inner), nil
			}
			start := len(ar.buf)
			if out, ok := chtype.AppendUnquote(ar.buf, e); ok {
				if !view {
					return string(out[start:]), nil
				}
				ar.buf = out
				return bstr(out[start:]), nil
			}
		}
		return viaDriver[string](t, e)
	}
	return parser[string]{fast: fast, slow: slow}
}

// plainText reports whether the inside of a JSON string needs no decoding: no escape, no
// control character, valid UTF-8.
func plainText(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s)
}

type unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

type signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// scanDigits reads a JSON non-negative integer token (no sign, no leading zero) of at most 19
// digits starting at row[i], ending at a delimiter.
func scanDigits(row []byte, i int) (v uint64, end int, ok bool) {
	k := i
	for k < len(row) && row[k]-'0' <= 9 {
		v = v*10 + uint64(row[k]-'0')
		k++
	}
	if n := k - i; n == 0 || n > 19 || n > 1 && row[i] == '0' || !delim(row, k) {
		return 0, 0, false
	}
	return v, k, true
}

func uintParser[T unsigned](t *chtype.Type) parser[T] {
	limit := uint64(^T(0))
	return parser[T]{
		fast: func(row []byte, i int) (T, int, bool) {
			v, end, ok := scanDigits(row, i)
			return T(v), end, ok && v <= limit
		},
		slow: func(e []byte) (T, error) {
			if len(e) == 20 && e[0] != '0' {
				// Twenty digits may still fit a UInt64.
				if v, err := strconv.ParseUint(bstr(e), 10, 64); err == nil && v <= limit {
					return T(v), nil
				}
			}
			return viaDriver[T](t, e)
		},
	}
}

func intParser[T signed](t *chtype.Type, bits uint) parser[T] {
	limit := uint64(1)<<(bits-1) - 1
	return parser[T]{
		fast: func(row []byte, i int) (T, int, bool) {
			if row[i] == '-' {
				v, end, ok := scanDigits(row, i+1)
				return T(-int64(v)), end, ok && v <= limit+1
			}
			v, end, ok := scanDigits(row, i)
			return T(v), end, ok && v <= limit
		},
		slow: func(e []byte) (T, error) { return viaDriver[T](t, e) },
	}
}

func floatParser[T float32 | float64](t *chtype.Type, bits int) parser[T] {
	p := parser[T]{slow: func(e []byte) (T, error) {
		if chtype.IsNumber(e) {
			if f, err := strconv.ParseFloat(bstr(e), bits); err == nil {
				return T(f), nil
			}
		}
		return viaDriver[T](t, e)
	}}
	if bits == 64 {
		// Rounding a float64 to float32 after the fact would round twice, so only Float64
		// has the exact shortcut.
		p.fast = func(row []byte, i int) (T, int, bool) {
			f, end, ok := scanDecimal(row, i)
			return T(f), end, ok
		}
	}
	return p
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// scanDecimal reads a JSON number without exponent and with at most 15 digits starting at
// row[i], ending at a delimiter. Such a number is m / 10^k with m and 10^k exact in a float64,
// so one division gives the correctly rounded value, as strconv.ParseFloat would.
func scanDecimal(row []byte, i int) (f float64, end int, ok bool) {
	k := i
	neg := row[k] == '-'
	if neg {
		k++
	}
	start := k
	var m uint64
	for k < len(row) && row[k]-'0' <= 9 {
		m = m*10 + uint64(row[k]-'0')
		k++
	}
	intDigits := k - start
	if intDigits == 0 || intDigits > 1 && row[start] == '0' {
		return 0, 0, false
	}
	frac := 0
	if k < len(row) && row[k] == '.' {
		k++
		fs := k
		for k < len(row) && row[k]-'0' <= 9 {
			m = m*10 + uint64(row[k]-'0')
			k++
		}
		if frac = k - fs; frac == 0 {
			return 0, 0, false
		}
	}
	if intDigits+frac > 15 || !delim(row, k) {
		return 0, 0, false
	}
	f = float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, k, true
}

// The ranges of Date and DateTime, in unix days and seconds.
var (
	maxDateDays     = daysFromCivil(2149, 6, 6)
	maxDateTimeSecs = int64(math.MaxUint32)
)

// fixed returns a parser for values that canonical rows write as a quoted string of exactly
// size bytes with no escapes, read by conv; everything else goes through ToDriver.
func fixed(t *chtype.Type, size int, conv func(e []byte) (time.Time, bool)) parser[time.Time] {
	return parser[time.Time]{
		fast: func(row []byte, i int) (time.Time, int, bool) {
			end := i + size
			if end > len(row) {
				return time.Time{}, 0, false
			}
			v, ok := conv(row[i:end])
			return v, end, ok
		},
		slow: func(e []byte) (time.Time, error) {
			if len(e) == size {
				if v, ok := conv(e); ok {
					return v, nil
				}
			}
			return viaDriver[time.Time](t, e)
		},
	}
}

// dateParser reads "YYYY-MM-DD".
func dateParser(t *chtype.Type) parser[time.Time] {
	return fixed(t, 12, func(e []byte) (time.Time, bool) {
		if e[0] != '"' || e[11] != '"' {
			return time.Time{}, false
		}
		y, mo, d, ok := civilDate(e[1:11])
		if !ok {
			return time.Time{}, false
		}
		days := daysFromCivil(y, mo, d)
		return time.Unix(days*86400, 0).UTC(), days >= 0 && days <= maxDateDays
	})
}

// timeParser reads "YYYY-MM-DD hh:mm:ss" in the column's zone. Rows of a batch mostly share a
// date, so the day number of the last date is kept.
func timeParser(t *chtype.Type) parser[time.Time] {
	loc := t.Location()
	var lastDate [10]byte
	var lastDays int64 = -1
	return fixed(t, 21, func(e []byte) (time.Time, bool) {
		if e[0] != '"' || e[20] != '"' || e[11] != ' ' || e[14] != ':' || e[17] != ':' {
			return time.Time{}, false
		}
		h, ok1 := two(e[12:14])
		mi, ok2 := two(e[15:17])
		s, ok3 := two(e[18:20])
		if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || s > 59 {
			return time.Time{}, false
		}
		var tm time.Time
		if loc == time.UTC && lastDays >= 0 && string(e[1:11]) == string(lastDate[:]) {
			tm = time.Unix(lastDays*86400+int64(h*3600+mi*60+s), 0).UTC()
		} else {
			y, mo, d, ok := civilDate(e[1:11])
			if !ok {
				return time.Time{}, false
			}
			if loc == time.UTC {
				days := daysFromCivil(y, mo, d)
				copy(lastDate[:], e[1:11])
				lastDays = days
				tm = time.Unix(days*86400+int64(h*3600+mi*60+s), 0).UTC()
			} else {
				tm = time.Date(y, time.Month(mo), d, h, mi, s, 0, loc)
			}
		}
		u := tm.Unix()
		return tm, u >= 0 && u <= maxDateTimeSecs
	})
}

// civilDate reads a valid calendar date "YYYY-MM-DD".
func civilDate(b []byte) (y, mo, d int, ok bool) {
	if b[4] != '-' || b[7] != '-' {
		return 0, 0, 0, false
	}
	hi, ok1 := two(b[0:2])
	lo, ok2 := two(b[2:4])
	mo, ok3 := two(b[5:7])
	d, ok4 := two(b[8:10])
	y = hi*100 + lo
	if !ok1 || !ok2 || !ok3 || !ok4 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, 0, 0, false
	}
	return y, mo, d, true
}

func two(b []byte) (int, bool) {
	a, c := b[0]-'0', b[1]-'0'
	return int(a)*10 + int(c), a <= 9 && c <= 9
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date (y ≥ 0).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}
