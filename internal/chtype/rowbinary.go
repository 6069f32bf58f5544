package chtype

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"
)

// RowBinary is ClickHouse's binary row format (FORMAT RowBinary): each value in its column's
// fixed or length-prefixed little-endian encoding, no separators, no names. The server reads it
// without parsing text, which is why validated rows travel through the queue in it (ADR 0013).

// RowBinarySupported reports whether values of t can be written by AppendRowBinary and read
// back by AppendCanonicalRowBinary. The types WaveHouse does not validate cannot. A JSON value
// is written as its compact text in a String, which the server reads with
// input_format_binary_read_json_as_string = 1 (see HasJSON).
func (t *Type) RowBinarySupported() bool {
	switch t.Kind {
	case Unsupported:
		return false
	case Nullable, LowCardinality, Array:
		return t.Elem.RowBinarySupported()
	case Map:
		return t.Key.RowBinarySupported() && t.Value.RowBinarySupported()
	case Tuple:
		for _, f := range t.Fields {
			if !f.Type.RowBinarySupported() {
				return false
			}
		}
	}
	return true
}

// AppendRowBinary validates the raw JSON value against t exactly as AppendCanonical does (same
// values accepted, same *Error codes) and appends its RowBinary encoding to dst. On error dst
// is returned at its original length. It never retains raw.
func (t *Type) AppendRowBinary(dst, raw []byte) ([]byte, error) {
	raw = trimWS(raw)
	if len(raw) == 0 {
		return dst, errorf(CodeInvalidValue, "empty value")
	}
	if raw[0] == 'n' {
		if !bytes.Equal(raw, []byte("null")) {
			return dst, errorf(CodeInvalidValue, "malformed JSON %q", excerpt(raw))
		}
		if !t.IsNullable() {
			return dst, errorf(CodeNullNotAllowed, "null is not allowed for %s", t.Name)
		}
	}
	out, err := t.binValue(dst, raw)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (t *Type) binValue(dst, raw []byte) ([]byte, error) {
	switch t.Kind {
	case Nullable:
		if raw[0] == 'n' {
			return append(dst, 1), nil
		}
		return t.Elem.binValue(append(dst, 0), raw)
	case LowCardinality:
		// LowCardinality is a storage property; RowBinary carries the inner type.
		return t.Elem.binValue(dst, raw)
	case String:
		if raw[0] != '"' {
			return dst, mismatch(t, raw)
		}
		out, ok := appendBinString(dst, raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		return out, nil
	case FixedString:
		s, ok := stringArg(raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		if len(s) > t.Len {
			return dst, errorf(CodeTooLong, "%d bytes do not fit %s", len(s), t.Name)
		}
		dst = append(dst, s...)
		return append(dst, make([]byte, t.Len-len(s))...), nil
	case Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64:
		u, err := t.parseInt(raw)
		if err != nil {
			return dst, err
		}
		return appendLE(dst, u, intWidth(t.Kind)), nil
	case Int128, Int256, UInt128, UInt256:
		v, err := t.parseBigInt(raw)
		if err != nil {
			return dst, err
		}
		return appendBigLE(dst, v, intBits[t.Kind]/8), nil
	case Float32:
		f, err := t.parseFloat(raw)
		if err != nil {
			return dst, err
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	case Float64:
		f, err := t.parseFloat(raw)
		if err != nil {
			return dst, err
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case Bool:
		switch string(raw) {
		case "true", "1", `"true"`:
			return append(dst, 1), nil
		case "false", "0", `"false"`:
			return append(dst, 0), nil
		}
		return dst, mismatch(t, raw)
	case Decimal:
		d, err := t.parseDecimal(raw)
		if err != nil {
			return dst, err
		}
		n := decimalBytes(t.Precision)
		if n <= 8 {
			return appendLE(dst, uint64(d.Shift(int32(t.Scale)).IntPart()), n), nil
		}
		return appendBigLE(dst, d.Shift(int32(t.Scale)).BigInt(), n), nil
	case Date, Date32, DateTime, DateTime64:
		tm, err := t.parseTime(raw)
		if err != nil {
			return dst, err
		}
		switch t.Kind {
		case Date:
			return binary.LittleEndian.AppendUint16(dst, uint16(tm.Unix()/86400)), nil
		case Date32:
			return binary.LittleEndian.AppendUint32(dst, uint32(int32(tm.Unix()/86400))), nil
		case DateTime:
			return binary.LittleEndian.AppendUint32(dst, uint32(tm.Unix())), nil
		}
		scale := pow10[t.Precision]
		ticks := tm.Unix()*scale + int64(tm.Nanosecond())/pow10[9-t.Precision]
		return binary.LittleEndian.AppendUint64(dst, uint64(ticks)), nil
	case UUID:
		s, ok := stringArg(raw)
		if !ok {
			return dst, mismatch(t, raw)
		}
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 && len(s) != 32 {
			return dst, errorf(CodeInvalidValue, "invalid UUID %q", excerpt([]byte(s)))
		}
		// ClickHouse keeps a UUID as two little-endian UInt64 halves, high half first.
		dst = binary.LittleEndian.AppendUint64(dst, binary.BigEndian.Uint64(u[:8]))
		return binary.LittleEndian.AppendUint64(dst, binary.BigEndian.Uint64(u[8:])), nil
	case IPv4, IPv6:
		a, err := t.parseIP(raw)
		if err != nil {
			return dst, err
		}
		if t.Kind == IPv4 {
			b := a.As4()
			return binary.LittleEndian.AppendUint32(dst, binary.BigEndian.Uint32(b[:])), nil
		}
		b := a.As16()
		return append(dst, b[:]...), nil
	case Enum8, Enum16:
		e, err := t.enumArg(raw)
		if err != nil {
			return dst, err
		}
		if t.Kind == Enum8 {
			return append(dst, byte(int8(e.Value))), nil
		}
		return binary.LittleEndian.AppendUint16(dst, uint16(e.Value)), nil
	case Array:
		return t.binArray(dst, raw)
	case Tuple:
		return t.binTuple(dst, raw)
	case Map:
		return t.binMap(dst, raw)
	case JSON:
		start := len(dst)
		out, err := t.appendValue(append(dst, 0), raw)
		if err != nil {
			return dst[:start], err
		}
		return prefixLength(out, start), nil
	}
	return dst, errorf(CodeUnsupportedType, "type %s cannot be written as RowBinary", t.Name)
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// decimalBytes is the width of Decimal(P, S) in RowBinary: Decimal32, 64, 128 or 256.
func decimalBytes(p int) int {
	switch {
	case p <= 9:
		return 4
	case p <= 18:
		return 8
	case p <= 38:
		return 16
	}
	return 32
}

// appendBinString appends the JSON string raw (quotes included) as a RowBinary String: its
// decoded length, then its bytes, decoded straight into dst. ok is false when raw is not a
// valid JSON string.
func appendBinString(dst, raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[len(raw)-1] != '"' {
		return dst, false
	}
	inner := raw[1 : len(raw)-1]
	simple := true
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return append(binary.AppendUvarint(dst, uint64(len(inner))), inner...), true
	}
	start := len(dst)
	out, ok := AppendUnquote(append(dst, 0), raw)
	if !ok {
		return dst, false
	}
	return prefixLength(out, start), true
}

// prefixLength turns b[start+1:], written after a one-byte placeholder at b[start], into a
// RowBinary String: the placeholder becomes its uvarint length, the text moving when the
// length needs more than one byte.
func prefixLength(b []byte, start int) []byte {
	text := b[start+1:]
	if len(text) < 0x80 {
		b[start] = byte(len(text))
		return b
	}
	text = append([]byte(nil), text...) // copied before the longer length overwrites it
	return append(binary.AppendUvarint(b[:start], uint64(len(text))), text...)
}

func intWidth(k Kind) int {
	switch k {
	case Int8, UInt8:
		return 1
	case Int16, UInt16:
		return 2
	case Int32, UInt32:
		return 4
	}
	return 8
}

// parseInt validates an Int8…UInt64 value and returns its two's-complement bits.
func (t *Type) parseInt(raw []byte) (uint64, error) {
	if v, ok := t.fastInt(raw); ok {
		return v, nil
	}
	s, err := numberArg(t, raw)
	if err != nil {
		return 0, err
	}
	if !isInteger([]byte(s)) {
		return 0, errorf(CodeInvalidValue, "%q is not an integer", excerpt([]byte(s)))
	}
	bits := 8 * intWidth(t.Kind)
	if isUnsigned(t.Kind) {
		if s[0] == '-' {
			if trimZeros(s[1:]) == "" {
				return 0, nil
			}
			return 0, errorf(CodeOutOfRange, "%s is negative, %s is unsigned", excerpt([]byte(s)), t.Name)
		}
		v, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return 0, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
		}
		return v, nil
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, errorf(CodeOutOfRange, "%s does not fit %s", excerpt([]byte(s)), t.Name)
	}
	return uint64(v), nil
}

func appendLE(dst []byte, v uint64, n int) []byte {
	for i := 0; i < n; i++ {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// appendBigLE appends v as an n-byte little-endian two's-complement integer.
func appendBigLE(dst []byte, v *big.Int, n int) []byte {
	if v.Sign() < 0 {
		v = new(big.Int).Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	v.FillBytes(dst[start:])
	b := dst[start:]
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return dst
}

func (t *Type) binArray(dst, raw []byte) ([]byte, error) {
	if raw[0] != '[' {
		return dst, mismatch(t, raw)
	}
	// The element count precedes the elements; it is counted first so no bytes are moved.
	// A malformed array is reported by the second pass, after any element error before the
	// fault, as AppendCanonical reports it.
	n := 0
	_, _ = SplitArray(raw, func(int, []byte) error { n++; return nil })
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(n))
	ok, err := SplitArray(raw, func(i int, elem []byte) error {
		var err error
		dst, err = t.Elem.AppendRowBinary(dst, elem)
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
	return dst, nil
}

func (t *Type) binTuple(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	switch {
	case raw[0] == '[':
		err := t.splitTupleArray(raw, func(_ int, f *Type, elem []byte) error {
			var err error
			dst, err = f.AppendRowBinary(dst, elem)
			return err
		})
		if err != nil {
			return dst[:start], err
		}
		return dst, nil
	case raw[0] == '{' && t.tupleNamed():
		vals, err := t.namedTupleVals(raw)
		if err != nil {
			return dst, err
		}
		for i, f := range t.Fields {
			if vals[i] == nil {
				return dst[:start], &Error{Code: CodeInvalidValue, Path: "." + f.Name, Message: "missing tuple element"}
			}
			var err error
			if dst, err = f.Type.AppendRowBinary(dst, vals[i]); err != nil {
				return dst[:start], tupleStep(err, t, i)
			}
		}
		return dst, nil
	}
	return dst, mismatch(t, raw)
}

func (t *Type) binMap(dst, raw []byte) ([]byte, error) {
	if raw[0] != '{' {
		return dst, mismatch(t, raw)
	}
	n := 0
	_, _ = splitObject(raw, func(_, _ []byte) error { n++; return nil })
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(n))
	var kbuf []byte
	ok, err := splitObject(raw, func(key, val []byte) error {
		ks, ok := unquote(key)
		if !ok {
			return errorf(CodeInvalidValue, "malformed key")
		}
		// A key is validated as canonical JSON first: a numeric key arrives as a JSON string
		// ("1") and only its canonical form is the number the key type reads.
		var err error
		kbuf, err = t.Key.AppendCanonical(kbuf[:0], key)
		if err != nil {
			return within(err, ".key("+excerpt([]byte(ks))+")")
		}
		if dst, err = t.Key.AppendRowBinary(dst, kbuf); err != nil {
			return within(err, ".key("+excerpt([]byte(ks))+")")
		}
		if dst, err = t.Value.AppendRowBinary(dst, val); err != nil {
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
	return dst, nil
}

// HasJSON reports whether t is or contains the JSON type, whose RowBinary values are text the
// server reads only with input_format_binary_read_json_as_string = 1.
func (t *Type) HasJSON() bool {
	switch t.Kind {
	case JSON:
		return true
	case Nullable, LowCardinality, Array:
		return t.Elem.HasJSON()
	case Map:
		return t.Key.HasJSON() || t.Value.HasJSON()
	case Tuple:
		for _, f := range t.Fields {
			if f.Type.HasJSON() {
				return true
			}
		}
	}
	return false
}

// fastInt parses the common case without allocating: a plain non-negative JSON number of at most
// 18 digits, without leading zeros, that fits t. Anything else takes the general path, which
// decides every error.
func (t *Type) fastInt(raw []byte) (uint64, bool) {
	if len(raw) == 0 || len(raw) > 18 || raw[0] == '0' && len(raw) > 1 {
		return 0, false
	}
	var v uint64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	w := intWidth(t.Kind)
	limit := uint64(1)<<(8*w) - 1
	if w == 8 {
		limit = math.MaxUint64
	}
	if !isUnsigned(t.Kind) {
		limit >>= 1
	}
	if v > limit {
		return 0, false
	}
	return v, true
}
