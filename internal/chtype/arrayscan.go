package chtype

// ArrayScanner walks the elements of one JSON array in place, without allocating: each element
// is a sub-slice of the input with surrounding whitespace removed. It checks bracket balance and
// separators only; elements are validated by their own types. The zero value is ready for Reset.
//
//	var sc chtype.ArrayScanner
//	sc.Reset(raw)
//	for elem, ok := sc.Next(); ok; elem, ok = sc.Next() { … }
//	if !sc.Valid() { … not a well-formed array … }
type ArrayScanner struct {
	raw   []byte
	i     int
	n     int
	state scanState
}

type scanState uint8

const (
	scanIdle scanState = iota
	scanMore
	scanDone
	scanBad
)

// Reset starts scanning raw (whitespace around the array is ignored).
func (s *ArrayScanner) Reset(raw []byte) {
	raw = trimWS(raw)
	s.raw, s.i, s.n, s.state = raw, 1, 0, scanMore
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		s.state = scanBad
	}
}

// Next returns the next element. It reports false at the end of the array and at the first
// malformation; Valid tells which. An element is returned before the separator after it is
// checked, so a malformation is reported by the call after the last good element.
func (s *ArrayScanner) Next() ([]byte, bool) {
	if s.state != scanMore {
		return nil, false
	}
	raw, i := s.raw, s.i
	for i < len(raw) && isWS(raw[i]) {
		i++
	}
	if s.n == 0 && i < len(raw) && raw[i] == ']' {
		s.end(i)
		return nil, false
	}
	j := skipValue(raw, i)
	if j < 0 || j == i {
		s.state = scanBad
		return nil, false
	}
	elem := raw[i:j]
	s.n++
	for j < len(raw) && isWS(raw[j]) {
		j++
	}
	switch {
	case j >= len(raw):
		s.state = scanBad
	case raw[j] == ',':
		s.i = j + 1
	case raw[j] == ']':
		s.end(j)
	default:
		s.state = scanBad
	}
	return elem, true
}

// end records the closing bracket at raw[i]: the array is valid when nothing follows it.
func (s *ArrayScanner) end(i int) {
	if i == len(s.raw)-1 {
		s.state = scanDone
	} else {
		s.state = scanBad
	}
}

// Valid reports, once Next has returned false, whether the input was a well-formed array.
func (s *ArrayScanner) Valid() bool { return s.state == scanDone }

// Len returns the number of elements returned so far.
func (s *ArrayScanner) Len() int { return s.n }

// SplitArray calls fn with each element of the JSON array raw (whitespace trimmed). It reports
// false when raw is not a well-bracketed array; fn has then seen the elements before the fault.
func SplitArray(raw []byte, fn func(i int, elem []byte) error) (bool, error) {
	var s ArrayScanner
	s.Reset(raw)
	for elem, ok := s.Next(); ok; elem, ok = s.Next() {
		if err := fn(s.n-1, elem); err != nil {
			return true, err
		}
	}
	return s.Valid(), nil
}
