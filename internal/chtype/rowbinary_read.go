package chtype

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// ErrShortRowBinary reports RowBinary data that ends inside a value or does not match its type.
var ErrShortRowBinary = errors.New("chtype: RowBinary value truncated or malformed")

// AppendCanonicalRowBinary reads one RowBinary value of t from the front of src and appends its
// canonical JSON encoding — the bytes AppendCanonical returns for the value AppendRowBinary was
// given — to dst. It returns the bytes of src consumed. An enum value t (or an element of t)
// does not name is an *Error with CodeInvalidValue naming the value and the enum type, its Path
// locating the element; other data that is not a value of t is ErrShortRowBinary. dst is then
// returned at its original length.
func (t *Type) AppendCanonicalRowBinary(dst, src []byte) ([]byte, int, error) {
	start := len(dst)
	out, n, ok := t.readBin(dst, src)
	if !ok {
		return dst[:start], 0, t.rowBinaryFault(src)
	}
	return out, n, nil
}

// rowBinaryFault explains why readBin refused the value of t at the front of src: the first enum
// value it meets that its type does not name, else ErrShortRowBinary. It walks src as readBin
// does (readBin skips the parts that read), and runs only once a value was refused.
func (t *Type) rowBinaryFault(src []byte) error {
	n := 0
	// next explains the value of ft at src[n:] when it is refused, else skips it.
	next := func(ft *Type, step string) (bool, error) {
		_, k, ok := ft.readBin(nil, src[n:])
		if !ok {
			return true, within(ft.rowBinaryFault(src[n:]), step)
		}
		n += k
		return false, nil
	}
	switch t.Kind {
	case Nullable:
		if len(src) > 0 && src[0] == 0 {
			return t.Elem.rowBinaryFault(src[1:])
		}
	case LowCardinality:
		return t.Elem.rowBinaryFault(src)
	case Enum8, Enum16:
		var v int64
		switch {
		case t.Kind == Enum8 && len(src) >= 1:
			v = int64(int8(src[0]))
		case t.Kind == Enum16 && len(src) >= 2:
			v = int64(int16(binary.LittleEndian.Uint16(src)))
		default:
			return ErrShortRowBinary
		}
		if _, ok := t.enumByValue(v); !ok {
			return errorf(CodeInvalidValue, "%d is not a value of %s", v, t.Name)
		}
	case Array, Map:
		cnt, k := binary.Uvarint(src)
		if k <= 0 || cnt > uint64(len(src)) {
			return ErrShortRowBinary
		}
		n = k
		for i := uint64(0); i < cnt; i++ {
			if t.Kind == Array {
				if done, err := next(t.Elem, "["+strconv.FormatUint(i, 10)+"]"); done {
					return err
				}
				continue
			}
			if done, err := next(t.Key, "["+strconv.FormatUint(i, 10)+"].key"); done {
				return err
			}
			if done, err := next(t.Value, "["+strconv.FormatUint(i, 10)+"].value"); done {
				return err
			}
		}
	case Tuple:
		for i, f := range t.Fields {
			step := "[" + strconv.Itoa(i) + "]"
			if f.Name != "" {
				step = "." + f.Name
			}
			if done, err := next(f.Type, step); done {
				return err
			}
		}
	}
	return ErrShortRowBinary
}

// SkipRowBinary returns the length of the RowBinary value of t at the front of src.
func (t *Type) SkipRowBinary(src []byte) (int, error) {
	_, n, err := t.AppendCanonicalRowBinary(nil, src)
	return n, err
}

func fixed(src []byte, n int) ([]byte, bool) {
	if len(src) < n {
		return nil, false
	}
	return src[:n], true
}

func (t *Type) readBin(dst, src []byte) ([]byte, int, bool) {
	switch t.Kind {
	case Nullable:
		if len(src) < 1 || src[0] > 1 {
			return dst, 0, false
		}
		if src[0] == 1 {
			return append(dst, "null"...), 1, true
		}
		out, n, ok := t.Elem.readBin(dst, src[1:])
		return out, n + 1, ok
	case LowCardinality:
		return t.Elem.readBin(dst, src)
	case String:
		l, k := binary.Uvarint(src)
		if k <= 0 || uint64(len(src)-k) < l {
			return dst, 0, false
		}
		return appendString(dst, src[k:k+int(l)]), k + int(l), true
	case FixedString:
		b, ok := fixed(src, t.Len)
		if !ok {
			return dst, 0, false
		}
		// Canonical FixedString values are the string as given; the zero padding is the
		// server's, so it is dropped here.
		end := len(b)
		for end > 0 && b[end-1] == 0 {
			end--
		}
		return appendString(dst, b[:end]), t.Len, true
	case Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64:
		w := intBits[t.Kind] / 8
		b, ok := fixed(src, w)
		if !ok {
			return dst, 0, false
		}
		var u uint64
		for i := w - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		if isUnsigned(t.Kind) {
			return strconv.AppendUint(dst, u, 10), w, true
		}
		shift := 64 - 8*w
		return strconv.AppendInt(dst, int64(u<<shift)>>shift, 10), w, true
	case Int128, Int256, UInt128, UInt256:
		w := intBits[t.Kind] / 8
		b, ok := fixed(src, w)
		if !ok {
			return dst, 0, false
		}
		return readBigLE(b, !isUnsigned(t.Kind)).Append(dst, 10), w, true
	case Float32:
		b, ok := fixed(src, 4)
		if !ok {
			return dst, 0, false
		}
		return appendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), Float32), 4, true
	case Float64:
		b, ok := fixed(src, 8)
		if !ok {
			return dst, 0, false
		}
		return appendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)), Float64), 8, true
	case Bool:
		if len(src) < 1 {
			return dst, 0, false
		}
		if src[0] != 0 {
			return append(dst, "true"...), 1, true
		}
		return append(dst, "false"...), 1, true
	case Decimal:
		w := decimalBytes(t.Precision)
		b, ok := fixed(src, w)
		if !ok {
			return dst, 0, false
		}
		d := decimal.NewFromBigInt(readBigLE(b, true), -int32(t.Scale))
		return append(dst, d.StringFixed(int32(t.Scale))...), w, true
	case Date:
		b, ok := fixed(src, 2)
		if !ok {
			return dst, 0, false
		}
		return t.appendTime(dst, time.Unix(int64(binary.LittleEndian.Uint16(b))*86400, 0).UTC()), 2, true
	case Date32:
		b, ok := fixed(src, 4)
		if !ok {
			return dst, 0, false
		}
		return t.appendTime(dst, time.Unix(int64(int32(binary.LittleEndian.Uint32(b)))*86400, 0).UTC()), 4, true
	case DateTime:
		b, ok := fixed(src, 4)
		if !ok {
			return dst, 0, false
		}
		return t.appendTime(dst, time.Unix(int64(binary.LittleEndian.Uint32(b)), 0)), 4, true
	case DateTime64:
		b, ok := fixed(src, 8)
		if !ok {
			return dst, 0, false
		}
		ticks, scale := int64(binary.LittleEndian.Uint64(b)), pow10[t.Precision]
		sec, frac := ticks/scale, ticks%scale
		if frac < 0 {
			sec, frac = sec-1, frac+scale
		}
		return t.appendTime(dst, time.Unix(sec, frac*pow10[9-t.Precision])), 8, true
	case UUID:
		b, ok := fixed(src, 16)
		if !ok {
			return dst, 0, false
		}
		var u uuid.UUID
		binary.BigEndian.PutUint64(u[:8], binary.LittleEndian.Uint64(b[:8]))
		binary.BigEndian.PutUint64(u[8:], binary.LittleEndian.Uint64(b[8:]))
		return appendString(dst, u.String()), 16, true
	case IPv4:
		b, ok := fixed(src, 4)
		if !ok {
			return dst, 0, false
		}
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
		return appendString(dst, netip.AddrFrom4(a).String()), 4, true
	case IPv6:
		b, ok := fixed(src, 16)
		if !ok {
			return dst, 0, false
		}
		return appendString(dst, netip.AddrFrom16([16]byte(b)).String()), 16, true
	case Enum8, Enum16:
		var v int16
		w := 1
		if t.Kind == Enum8 {
			if len(src) < 1 {
				return dst, 0, false
			}
			v = int16(int8(src[0]))
		} else {
			b, ok := fixed(src, 2)
			if !ok {
				return dst, 0, false
			}
			v, w = int16(binary.LittleEndian.Uint16(b)), 2
		}
		e, ok := t.enumByValue(int64(v))
		if !ok {
			return dst, 0, false
		}
		return appendString(dst, e.Name), w, true
	case Array:
		return t.readArray(dst, src)
	case Tuple:
		dst = append(dst, '[')
		n := 0
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			var k int
			var ok bool
			if dst, k, ok = f.Type.readBin(dst, src[n:]); !ok {
				return dst, 0, false
			}
			n += k
		}
		return append(dst, ']'), n, true
	case Map:
		return t.readMap(dst, src)
	case JSON:
		l, k := binary.Uvarint(src)
		if k <= 0 || uint64(len(src)-k) < l {
			return dst, 0, false
		}
		return append(dst, src[k:k+int(l)]...), k + int(l), true
	}
	return dst, 0, false
}

func (t *Type) readArray(dst, src []byte) ([]byte, int, bool) {
	cnt, n := binary.Uvarint(src)
	if n <= 0 || cnt > uint64(len(src)) {
		return dst, 0, false
	}
	dst = append(dst, '[')
	for i := uint64(0); i < cnt; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var k int
		var ok bool
		if dst, k, ok = t.Elem.readBin(dst, src[n:]); !ok {
			return dst, 0, false
		}
		n += k
	}
	return append(dst, ']'), n, true
}

func (t *Type) readMap(dst, src []byte) ([]byte, int, bool) {
	cnt, n := binary.Uvarint(src)
	if n <= 0 || cnt > uint64(len(src)) {
		return dst, 0, false
	}
	dst = append(dst, '{')
	var kbuf []byte
	for i := uint64(0); i < cnt; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var k int
		var ok bool
		// Canonical map keys are JSON strings: a key whose canonical form is not a string
		// is quoted, as AppendCanonical does.
		if kbuf, k, ok = t.Key.readBin(kbuf[:0], src[n:]); !ok {
			return dst, 0, false
		}
		n += k
		if len(kbuf) > 0 && kbuf[0] == '"' {
			dst = append(dst, kbuf...)
		} else {
			dst = appendString(dst, kbuf)
		}
		dst = append(dst, ':')
		if dst, k, ok = t.Value.readBin(dst, src[n:]); !ok {
			return dst, 0, false
		}
		n += k
	}
	return append(dst, '}'), n, true
}

// readBigLE reads a little-endian integer, two's complement when signed.
func readBigLE(b []byte, signed bool) *big.Int {
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if signed && len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
