package chtype

import (
	"strconv"
	"time"
)

var (
	minDate       = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDate       = time.Date(2149, 6, 6, 0, 0, 0, 0, time.UTC)
	minDate32     = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDate32     = time.Date(2299, 12, 31, 0, 0, 0, 0, time.UTC)
	maxDateTime   = time.Unix(math32Max, 0).UTC()
	maxDateTime64 = time.Date(2299, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

const math32Max = 1<<32 - 1

// parseTime reads a Date/Date32/DateTime/DateTime64 value: RFC 3339, the ClickHouse text forms
// ("YYYY-MM-DD", "YYYY-MM-DD hh:mm:ss[.frac]") or, for the DateTime kinds, unix seconds.
func (t *Type) parseTime(raw []byte) (time.Time, error) {
	var s string
	isDate := t.Kind == Date || t.Kind == Date32
	if inner, plain := plainString(raw); plain {
		s = string(inner) // a short local string: no allocation
	} else if raw[0] == '"' {
		var ok bool
		if s, ok = unquote(raw); !ok {
			return time.Time{}, errorf(CodeInvalidValue, "malformed JSON string")
		}
	} else if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
		if isDate {
			return time.Time{}, errorf(CodeTypeMismatch, "expected a date string for %s, got a number", t.Name)
		}
		if !isNumber(raw) {
			return time.Time{}, errorf(CodeInvalidValue, "malformed number %q", excerpt(raw))
		}
		s = string(raw)
	} else {
		return time.Time{}, mismatch(t, raw)
	}
	tm, ok := t.parseTimeText(s)
	if !ok {
		return time.Time{}, errorf(CodeInvalidValue, "cannot parse %q as %s (want RFC 3339, \"YYYY-MM-DD hh:mm:ss\" or unix seconds)", excerpt([]byte(s)), t.Name)
	}
	lo, hi := minDate, maxDateTime
	switch t.Kind {
	case Date:
		hi = maxDate
	case Date32:
		lo, hi = minDate32, maxDate32
	case DateTime64:
		lo, hi = minDate32, maxDateTime64
	}
	if isDate {
		tm = time.Date(tm.Year(), tm.Month(), tm.Day(), 0, 0, 0, 0, time.UTC)
	}
	if tm.Before(lo) || tm.After(hi) {
		return time.Time{}, errorf(CodeOutOfRange, "%q is outside the range of %s", excerpt([]byte(s)), t.Name)
	}
	return tm, nil
}

func (t *Type) parseTimeText(s string) (time.Time, bool) {
	if s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '-') && (len(s) < 5 || s[4] != '-') {
		return parseUnix(s)
	}
	loc := t.Location()
	if t.Kind == Date || t.Kind == Date32 {
		loc = time.UTC
	}
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	var h, mi, sec, nsec int
	rest := s[10:]
	if len(rest) > 0 {
		if len(rest) < 9 || rest[0] != ' ' && rest[0] != 'T' || rest[3] != ':' || rest[6] != ':' {
			return time.Time{}, false
		}
		var ok4, ok5, ok6 bool
		h, ok4 = digits(rest[1:3])
		mi, ok5 = digits(rest[4:6])
		sec, ok6 = digits(rest[7:9])
		if !ok4 || !ok5 || !ok6 || h > 23 || mi > 59 || sec > 59 {
			return time.Time{}, false
		}
		rest = rest[9:]
		if len(rest) > 0 && rest[0] == '.' {
			i := 1
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				if i <= 9 {
					nsec = nsec*10 + int(rest[i]-'0')
				}
				i++
			}
			if i == 1 {
				return time.Time{}, false
			}
			for j := i; j <= 9; j++ {
				nsec *= 10
			}
			rest = rest[i:]
		}
		switch {
		case rest == "":
		case rest == "Z" || rest == "z":
			loc = time.UTC
		case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':',
			len(rest) == 5 && (rest[0] == '+' || rest[0] == '-'):
			oh, ok7 := digits(rest[1:3])
			om, ok8 := digits(rest[len(rest)-2:])
			if !ok7 || !ok8 || oh > 23 || om > 59 {
				return time.Time{}, false
			}
			off := oh*3600 + om*60
			if rest[0] == '-' {
				off = -off
			}
			loc = time.FixedZone("", off)
		default:
			return time.Time{}, false
		}
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, nsec, loc), true
}

func daysIn(m, y int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, len(s) > 0
}

// parseUnix reads unix seconds with an optional decimal fraction, without float rounding.
func parseUnix(s string) (time.Time, bool) {
	intPart, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	if len(intPart) > 12 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	nsec := 0
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return time.Time{}, false
		}
		if i < 9 {
			nsec = nsec*10 + int(frac[i]-'0')
		}
	}
	for i := len(frac); i < 9; i++ {
		nsec *= 10
	}
	if sec < 0 && nsec > 0 {
		sec--
		nsec = 1e9 - nsec
	}
	return time.Unix(sec, int64(nsec)).UTC(), true
}

// appendTime writes tm in the canonical text form of t.
func (t *Type) appendTime(dst []byte, tm time.Time) []byte {
	switch t.Kind {
	case Date, Date32:
		return tm.AppendFormat(append(dst, '"'), `2006-01-02"`)
	}
	tm = tm.In(t.Location())
	dst = tm.AppendFormat(append(dst, '"'), "2006-01-02 15:04:05")
	if t.Kind == DateTime64 && t.Precision > 0 {
		ns := strconv.Itoa(tm.Nanosecond() + 1e9)
		dst = append(dst, '.')
		dst = append(dst, ns[1:1+t.Precision]...)
	}
	return append(dst, '"')
}
