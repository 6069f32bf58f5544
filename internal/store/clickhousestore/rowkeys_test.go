package clickhousestore

import (
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore/sharding"
)

// TestCanonicalRowKeys: the key values of canonical rows are read as ClickHouse holds them (a
// negative integer as two's complement, an escaped string unescaped), and a row whose key value
// is not a value of its type is a store.ErrRejected *store.RowError naming that row.
func TestCanonicalRowKeys(t *testing.T) {
	b := store.Batch{Columns: []string{"a", "n", "s"}, Rows: [][]byte{
		[]byte(`[1.5, -2, "x\"\u00e9"]`),
		[]byte(`[0, 18446744073709551615, ""]`),
		[]byte(`[0, "7", "z"]`),
	}}
	key, err := sharding.Parse("cityHash64(n, s)", func(c string) (string, bool) { return map[string]string{"n": "Int64", "s": "String"}[c], true })
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]any
	err = canonicalRowKeys(b, []int{1, 2}, key, func(_ int, vals []sharding.Value) error {
		got = append(got, [2]any{vals[0].Int, string(vals[1].Bytes)})
		return nil
	})
	if len(got) != 2 || got[0] != [2]any{uint64(1<<64 - 2), "x\"é"} || got[1] != [2]any{uint64(1<<64 - 1), ""} {
		t.Errorf("values %v", got)
	}
	var re *store.RowError
	if !errors.As(err, &re) || re.Row != 2 || !errors.Is(err, store.ErrRejected) {
		t.Errorf("a quoted integer key: error %v, want a rejected RowError for row 2", err)
	}
}
