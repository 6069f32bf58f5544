package clickhousestore

import (
	"fmt"
	"strings"
	"sync"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

// decoder turns the canonical rows of a batch into typed columns, one builder per column. It
// is reused across batches with the same column types (see decoderPool), so its slices keep
// their capacity.
type decoder struct {
	builders []builder
	arena    arena
}

func newDecoder(types []*chtype.Type, n int) *decoder {
	d := &decoder{builders: make([]builder, len(types))}
	for i, t := range types {
		d.builders[i] = newBuilder(t, n, &d.arena)
	}
	return d
}

// reset empties the decoder for the next batch; it holds no reference to earlier rows after.
func (d *decoder) reset() {
	for _, b := range d.builders {
		b.reset()
	}
	d.arena.buf = d.arena.buf[:0]
}

// decode converts the rows of b in a single pass over each row: each column's builder reads its
// value straight from the row bytes and says where it ends. A value that cannot be converted is
// a *store.RowError naming the row and column and wrapping store.ErrRejected and the
// *chtype.Error; a row that is not a JSON array of one value per column names the row only.
func (d *decoder) decode(b store.Batch) error {
	for ri, row := range b.Rows {
		if ci, err := d.row(row); err != nil {
			re := &store.RowError{Row: ri, Err: fmt.Errorf("%w: %w", store.ErrRejected, err)}
			if ci >= 0 {
				re.Column = columnName(b.Columns, ci)
			}
			return re
		}
	}
	return nil
}

// row decodes one row. On a conversion failure it returns the column index; on a malformed
// row, -1. Which rows are malformed is exactly what chtype.ArrayScanner decides.
func (d *decoder) row(row []byte) (int, error) {
	n := len(d.builders)
	i, last := skipWS(row, 0), len(row)-1
	for last >= 0 && (row[last] == ' ' || row[last] == '\t' || row[last] == '\n' || row[last] == '\r') {
		last--
	}
	if last <= i || row[i] != '[' || row[last] != ']' {
		return -1, d.notArray()
	}
	row = row[:last+1]
	i = skipWS(row, i+1)
	if row[i] == ']' {
		if i == last && n == 0 {
			return 0, nil
		}
		return -1, d.notArray()
	}
	for ci := 0; ; ci++ {
		if ci == n {
			if j := chtype.SkipValue(row, i); j < 0 || j == i {
				return -1, d.notArray()
			}
			return -1, fmt.Errorf("more than %d values", n)
		}
		end, err := d.builders[ci].take(row, i)
		if err != nil {
			return ci, err
		}
		if end < 0 {
			return -1, d.notArray()
		}
		i = skipWS(row, end)
		if i > last {
			return -1, d.notArray()
		}
		switch row[i] {
		case ',':
			i = skipWS(row, i+1)
		case ']':
			if i != last || ci+1 != n {
				return -1, d.notArray()
			}
			return 0, nil
		default:
			return -1, d.notArray()
		}
	}
}

func (d *decoder) notArray() error {
	return fmt.Errorf("row is not a JSON array of %d values", len(d.builders))
}

func columnName(cols []string, i int) string {
	if i < len(cols) {
		return cols[i]
	}
	return fmt.Sprintf("#%d", i+1)
}

// decoderPool keeps idle decoders per column-type signature. Idle decoders are held in
// sync.Pools, which the garbage collector empties, so a burst of large batches does not pin
// memory; the map itself grows by one small entry per distinct signature. The zero value is
// ready to use.
type decoderPool struct {
	pools sync.Map // signature → *sync.Pool of *decoder
}

func signature(types []*chtype.Type) string {
	var sb strings.Builder
	for _, t := range types {
		sb.WriteString(t.Name)
		sb.WriteByte(0)
	}
	return sb.String()
}

// get returns an empty decoder for types, sized for n rows when new, and the key to put it
// back under.
func (p *decoderPool) get(types []*chtype.Type, n int) (*decoder, string) {
	key := signature(types)
	if sp, ok := p.pools.Load(key); ok {
		if d, ok := sp.(*sync.Pool).Get().(*decoder); ok {
			return d, key
		}
	}
	return newDecoder(types, n), key
}

// put empties d and keeps it for the next batch of the same signature.
func (p *decoderPool) put(key string, d *decoder) {
	d.reset()
	sp, ok := p.pools.Load(key)
	if !ok {
		sp, _ = p.pools.LoadOrStore(key, &sync.Pool{})
	}
	sp.(*sync.Pool).Put(d)
}
