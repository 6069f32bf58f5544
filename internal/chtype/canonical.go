package chtype

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"net/netip"
	"strconv"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Canonical validates the raw JSON value against t and returns its canonical encoding, or an
// *Error.
func (t *Type) Canonical(raw []byte) ([]byte, error) {
	return t.AppendCanonical(nil, raw)
}

// AppendCanonical validates the raw JSON value against t and appends its canonical encoding to
// dst. On error dst is returned unchanged (its length; bytes past it may have been written) with
// an *Error. It never retains raw.
func (t *Type) AppendCanonical(dst, raw []byte) ([]byte, error) {
	raw = trimWS(raw)
	if len(raw) == 0 {
		return dst, errorf(CodeInvalidValue, "empty value")
	}
	if raw[0] == 'n' {
		if !bytes.Equal(raw, []byte("null")) {
			return dst, errorf(CodeInvalidValue, "malformed JSON %q", excerpt(raw))
		}
		if t.IsNullable() {
			return append(dst, "null"...), nil
		}
		return dst, errorf(CodeNullNotAllowed, "null is not allowed for %s", t.Name)
	}
	out, err := t.appendValue(dst, raw)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (t *Type) appendValue(dst, raw []byte) ([]byte, error) {
	switch t.Kind {
	case Nullable, LowCardinality:
		if raw[0] == 'n' {
			return t.AppendCanonical(dst, raw)
		}
		return t.Elem.appendValue(dst, raw)
	case String:
		s, ok := stringArg(raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		return appendString(dst, s), nil
	case FixedString:
		s, ok := stringArg(raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		if len(s) > t.Len {
			return dst, errorf(CodeTooLong, "%d bytes do not fit %s", len(s), t.Name)
		}
		return appendString(dst, s), nil
	case Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64:
		return t.appendInt(dst, raw)
	case Int128, Int256, UInt128, UInt256:
		return t.appendBigInt(dst, raw)
	case Float32, Float64:
		return t.appendFloat(dst, raw)
	case Bool:
		switch string(raw) {
		case "true", "1", `"true"`:
			return append(dst, "true"...), nil
		case "false", "0", `"false"`:
			return append(dst, "false"...), nil
		}
		return dst, mismatch(t, raw)
	case Decimal:
		return t.appendDecimal(dst, raw)
	case Date, Date32, DateTime, DateTime64:
		tm, err := t.parseTime(raw)
		if err != nil {
			return dst, err
		}
		return t.appendTime(dst, tm), nil
	case UUID:
		s, ok := stringArg(raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 && len(s) != 32 {
			return dst, errorf(CodeInvalidValue, "invalid UUID %q", excerpt([]byte(s)))
		}
		return appendString(dst, u.String()), nil
	case IPv4, IPv6:
		return t.appendIP(dst, raw)
	case Enum8, Enum16:
		return t.appendEnum(dst, raw)
	case Array:
		return t.appendArray(dst, raw)
	case Tuple:
		return t.appendTuple(dst, raw)
	case Map:
		return t.appendMap(dst, raw)
	case JSON:
		if raw[0] != '{' || !json.Valid(raw) {
			return dst, errorf(CodeTypeMismatch, "expected a JSON object, got %s", jsonKindName(raw))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return dst, errorf(CodeInvalidValue, "malformed JSON object")
		}
		return append(dst, buf.Bytes()...), nil
	}
	return dst, errorf(CodeUnsupportedType, "type %s is not supported", t.Name)
}

// stringArg returns the decoded string when raw is a JSON string.
func stringArg(raw []byte) (string, bool) {
	if raw[0] != '"' {
		return "", false
	}
	return unquote(raw)
}

// numberArg returns the number text of raw: the token itself, or the content of a JSON string.
func numberArg(t *Type, raw []byte) (string, error) {
	switch raw[0] {
	case '"':
		s, ok := unquote(raw)
		if !ok {
			return "", errorf(CodeInvalidValue, "malformed JSON string")
		}
		return s, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if !isNumber(raw) {
			return "", errorf(CodeInvalidValue, "malformed number %q", excerpt(raw))
		}
		return string(raw), nil
	}
	return "", mismatch(t, raw)
}

var intBits = map[Kind]int{Int8: 8, Int16: 16, Int32: 32, Int64: 64, UInt8: 8, UInt16: 16, UInt32: 32, UInt64: 64,
	Int128: 128, Int256: 256, UInt128: 128, UInt256: 256}

func isUnsigned(k Kind) bool {
	return k == UInt8 || k == UInt16 || k == UInt32 || k == UInt64 || k == UInt128 || k == UInt256
}

func (t *Type) appendInt(dst, raw []byte) ([]byte, error) {
	s, err := numberArg(t, raw)
	if err != nil {
		return dst, err
	}
	if !isInteger([]byte(s)) {
		return dst, errorf(CodeInvalidValue, "%q is not an integer", excerpt([]byte(s)))
	}
	bits := intBits[t.Kind]
	if isUnsigned(t.Kind) {
		if s[0] == '-' {
			if trimZeros(s[1:]) == "" {
				return append(dst, '0'), nil
			}
			return dst, errorf(CodeOutOfRange, "%s is negative, %s is unsigned", excerpt([]byte(s)), t.Name)
		}
		v, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return dst, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
		}
		return strconv.AppendUint(dst, v, 10), nil
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return dst, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
	}
	return strconv.AppendInt(dst, v, 10), nil
}

func trimZeros(s string) string {
	for len(s) > 0 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

func (t *Type) bigRange() (lo, hi *big.Int) {
	bits := uint(intBits[t.Kind])
	one := big.NewInt(1)
	if isUnsigned(t.Kind) {
		return new(big.Int), new(big.Int).Sub(new(big.Int).Lsh(one, bits), one)
	}
	hi = new(big.Int).Sub(new(big.Int).Lsh(one, bits-1), one)
	lo = new(big.Int).Neg(new(big.Int).Lsh(one, bits-1))
	return lo, hi
}

func (t *Type) parseBigInt(raw []byte) (*big.Int, error) {
	s, err := numberArg(t, raw)
	if err != nil {
		return nil, err
	}
	if !isInteger([]byte(s)) || len(s) > 100 {
		return nil, errorf(CodeInvalidValue, "%q is not an integer", excerpt([]byte(s)))
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, errorf(CodeInvalidValue, "%q is not an integer", excerpt([]byte(s)))
	}
	lo, hi := t.bigRange()
	if v.Cmp(lo) < 0 || v.Cmp(hi) > 0 {
		return nil, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
	}
	return v, nil
}

func (t *Type) appendBigInt(dst, raw []byte) ([]byte, error) {
	v, err := t.parseBigInt(raw)
	if err != nil {
		return dst, err
	}
	return v.Append(dst, 10), nil
}

func (t *Type) parseFloat(raw []byte) (float64, error) {
	s, err := numberArg(t, raw)
	if err != nil {
		return 0, err
	}
	if !isNumber([]byte(s)) {
		return 0, errorf(CodeInvalidValue, "%q is not a number", excerpt([]byte(s)))
	}
	bits := 64
	if t.Kind == Float32 {
		bits = 32
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil || math.IsInf(f, 0) {
		return 0, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
	}
	return f, nil
}

func (t *Type) appendFloat(dst, raw []byte) ([]byte, error) {
	f, err := t.parseFloat(raw)
	if err != nil {
		return dst, err
	}
	return appendFloat(dst, f, t.Kind), nil
}

func appendFloat(dst []byte, f float64, k Kind) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	bits := 64
	if k == Float32 {
		bits = 32
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func (t *Type) parseDecimal(raw []byte) (decimal.Decimal, error) {
	s, err := numberArg(t, raw)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if !isNumber([]byte(s)) || len(s) > 200 {
		return decimal.Decimal{}, errorf(CodeInvalidValue, "%q is not a decimal number", excerpt([]byte(s)))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, errorf(CodeInvalidValue, "%q is not a decimal number", excerpt([]byte(s)))
	}
	if -d.Exponent() > int32(t.Scale) && !d.Equal(d.Truncate(int32(t.Scale))) {
		return decimal.Decimal{}, errorf(CodeInvalidValue, "%s has more than %d fractional digits", excerpt([]byte(s)), t.Scale)
	}
	limit := decimal.New(1, int32(t.Precision-t.Scale))
	if d.Abs().Cmp(limit) >= 0 {
		return decimal.Decimal{}, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
	}
	return d, nil
}

func (t *Type) appendDecimal(dst, raw []byte) ([]byte, error) {
	d, err := t.parseDecimal(raw)
	if err != nil {
		return dst, err
	}
	return append(dst, d.StringFixed(int32(t.Scale))...), nil
}

func (t *Type) parseIP(raw []byte) (netip.Addr, error) {
	s, ok := stringArg(raw)
	if !ok {
		return netip.Addr{}, mismatch(t, raw)
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errorf(CodeInvalidValue, "invalid IP address %q", excerpt([]byte(s)))
	}
	if t.Kind == IPv4 {
		if a.Is4In6() {
			a = a.Unmap()
		}
		if !a.Is4() {
			return netip.Addr{}, errorf(CodeInvalidValue, "%q is not an IPv4 address", excerpt([]byte(s)))
		}
		return a, nil
	}
	if a.Is4() {
		a = netip.AddrFrom16(a.As16())
	}
	return a, nil
}

func (t *Type) appendIP(dst, raw []byte) ([]byte, error) {
	a, err := t.parseIP(raw)
	if err != nil {
		return dst, err
	}
	return appendString(dst, a.String()), nil
}

func (t *Type) enumArg(raw []byte) (EnumValue, error) {
	if raw[0] == '"' {
		s, ok := unquote(raw)
		if !ok {
			return EnumValue{}, errorf(CodeInvalidValue, "malformed JSON string")
		}
		if e, ok := t.enumByName(s); ok {
			return e, nil
		}
		return EnumValue{}, errorf(CodeInvalidValue, "%q is not a value of %s", excerpt([]byte(s)), t.Name)
	}
	if !isInteger(raw) {
		return EnumValue{}, mismatch(t, raw)
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err == nil {
		if e, ok := t.enumByValue(v); ok {
			return e, nil
		}
	}
	return EnumValue{}, errorf(CodeInvalidValue, "%s is not a value of %s", excerpt(raw), t.Name)
}

func (t *Type) appendEnum(dst, raw []byte) ([]byte, error) {
	e, err := t.enumArg(raw)
	if err != nil {
		return dst, err
	}
	return appendString(dst, e.Name), nil
}

func (t *Type) appendArray(dst, raw []byte) ([]byte, error) {
	if raw[0] != '[' {
		return dst, mismatch(t, raw)
	}
	start := len(dst)
	dst = append(dst, '[')
	ok, err := SplitArray(raw, func(i int, elem []byte) error {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		dst, err = t.Elem.AppendCanonical(dst, elem)
		if err != nil {
			return within(err, "["+strconv.Itoa(i)+"]")
		}
		return nil
	})
	if err != nil {
		return dst[:start], err
	}
	if !ok {
		return dst[:start], errorf(CodeInvalidValue, "malformed JSON array")
	}
	return append(dst, ']'), nil
}

func (t *Type) appendTuple(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	switch {
	case raw[0] == '[':
		dst = append(dst, '[')
		err := t.splitTupleArray(raw, func(i int, f *Type, elem []byte) error {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			dst, err = f.AppendCanonical(dst, elem)
			return err
		})
		if err != nil {
			return dst[:start], err
		}
		return append(dst, ']'), nil
	case raw[0] == '{' && t.tupleNamed():
		vals, err := t.namedTupleVals(raw)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			if vals[i] == nil {
				return dst[:start], &Error{Code: CodeInvalidValue, Path: "." + f.Name, Message: "missing tuple element"}
			}
			var err error
			if dst, err = f.Type.AppendCanonical(dst, vals[i]); err != nil {
				return dst[:start], tupleStep(err, t, i)
			}
		}
		return append(dst, ']'), nil
	}
	return dst, mismatch(t, raw)
}

// splitTupleArray calls fn with each element of the JSON array raw and its field's type, and
// checks that the array gives exactly one element per field. fn's error gets the field's path.
func (t *Type) splitTupleArray(raw []byte, fn func(i int, f *Type, elem []byte) error) error {
	n := 0
	ok, err := SplitArray(raw, func(i int, elem []byte) error {
		if i >= len(t.Fields) {
			return errorf(CodeInvalidValue, "more than %d tuple elements", len(t.Fields))
		}
		n = i + 1
		return tupleStep(fn(i, t.Fields[i].Type, elem), t, i)
	})
	switch {
	case err != nil:
		return err
	case !ok:
		return errorf(CodeInvalidValue, "malformed JSON array")
	case n != len(t.Fields):
		return errorf(CodeInvalidValue, "%d tuple elements, %s has %d", n, t.Name, len(t.Fields))
	}
	return nil
}

// namedTupleVals splits the JSON object raw into the raw values of t's named fields, in field
// order; a field the object does not give is nil.
func (t *Type) namedTupleVals(raw []byte) ([][]byte, error) {
	vals := make([][]byte, len(t.Fields))
	ok, err := splitObject(raw, func(key, val []byte) error {
		k, ok := unquote(key)
		if !ok {
			return errorf(CodeInvalidValue, "malformed key")
		}
		for i, f := range t.Fields {
			if f.Name == k {
				vals[i] = val
				return nil
			}
		}
		return errorf(CodeInvalidValue, "%q is not an element of %s", excerpt([]byte(k)), t.Name)
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(CodeInvalidValue, "malformed JSON object")
	}
	return vals, nil
}

func tupleStep(err error, t *Type, i int) error {
	if err == nil {
		return nil
	}
	if t.Fields[i].Name != "" {
		return within(err, "."+t.Fields[i].Name)
	}
	return within(err, "["+strconv.Itoa(i)+"]")
}

func (t *Type) appendMap(dst, raw []byte) ([]byte, error) {
	if raw[0] != '{' {
		return dst, mismatch(t, raw)
	}
	start := len(dst)
	dst = append(dst, '{')
	n := 0
	var kbuf []byte
	ok, err := splitObject(raw, func(key, val []byte) error {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		ks, ok := unquote(key)
		if !ok {
			return errorf(CodeInvalidValue, "malformed key")
		}
		var err error
		kbuf, err = t.Key.AppendCanonical(kbuf[:0], key)
		if err != nil {
			return within(err, ".key("+excerpt([]byte(ks))+")")
		}
		if kbuf[0] == '"' {
			dst = append(dst, kbuf...)
		} else {
			dst = appendString(dst, string(kbuf))
		}
		dst = append(dst, ':')
		if dst, err = t.Value.AppendCanonical(dst, val); err != nil {
			return within(err, "."+excerpt([]byte(ks)))
		}
		return nil
	})
	if err != nil {
		return dst[:start], err
	}
	if !ok {
		return dst[:start], errorf(CodeInvalidValue, "malformed JSON object")
	}
	return append(dst, '}'), nil
}
