package sharding

import (
	"errors"
	"testing"
)

func types(m map[string]string) func(string) (string, bool) {
	return func(c string) (string, bool) { t, ok := m[c]; return t, ok }
}

var cols = types(map[string]string{"id": "UInt64", "i8": "Int8", "s": "String", "f": "Float64", "n": "Nullable(UInt64)"})

// TestParseRefusesWhatItCannotEvaluate: every key outside the supported set is ErrUnsupported,
// with the expression in the message.
func TestParseRefusesWhatItCannotEvaluate(t *testing.T) {
	for _, expr := range []string{"rand()", "sipHash64(s)", "id % 2", "intHash64(s)", "cityHash64(f)", "n", "cityHash64(toString(id))", "missing", "f", ""} {
		_, err := Parse(expr, cols)
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("Parse(%q) = %v, want ErrUnsupported", expr, err)
		}
	}
	for _, expr := range []string{"id", "`i8`", "intHash64(id)", "cityHash64(id, s)", "cityHash64(s)"} {
		if _, err := Parse(expr, cols); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

// TestSelectorWeights: shard i owns weight[i] consecutive slots of value % total.
func TestSelectorWeights(t *testing.T) {
	s := NewSelector([]uint64{1, 2})
	for v, want := range []int{0, 1, 1, 0, 1, 1} {
		if got := s.Shard(uint64(v)); got != want {
			t.Errorf("Shard(%d) = %d, want %d", v, got, want)
		}
	}
	if s.Shards() != 2 {
		t.Errorf("Shards() = %d", s.Shards())
	}
}

func TestParseDistributed(t *testing.T) {
	d, err := ParseDistributed("CREATE TABLE db.t_all (id UInt64) ENGINE = Distributed(wh_cluster, 'db', t, cityHash64(id, s), pol)")
	if err != nil {
		t.Fatal(err)
	}
	if d != (Distributed{Cluster: "wh_cluster", Database: "db", Table: "t", ShardingKey: "cityHash64(id, s)"}) {
		t.Errorf("got %+v", d)
	}
	d, err = ParseDistributed("CREATE TABLE t_all (id UInt64) ENGINE = Distributed('c,(x', `d b`, t) SETTINGS x = 1")
	if err != nil || d != (Distributed{Cluster: "c,(x", Database: "d b", Table: "t"}) {
		t.Errorf("quoted names: got %+v, %v", d, err)
	}
	if _, err := ParseDistributed("CREATE TABLE t (id UInt64) ENGINE = MergeTree ORDER BY id"); err == nil {
		t.Error("a MergeTree table parsed as Distributed")
	}
}

// TestHashesAsClickHouse18_16: values the 18.16 server returned for the same calls
// (intHash64(0), intHash64(1), cityHash64(toInt8(-1)), intHash64(toInt8(-1)), cityHash64('a','b')).
func TestHashesAsClickHouse18_16(t *testing.T) {
	k := func(expr string) *Key {
		k, err := Parse(expr, types(map[string]string{"u": "UInt64", "i": "Int8", "a": "String", "b": "String"}))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	minus1 := uint64(0xFFFFFFFFFFFFFFFF)
	for _, c := range []struct {
		expr string
		vals []Value
		want uint64
	}{
		{"intHash64(u)", []Value{{Int: 0}}, 4761183170873013810},
		{"intHash64(u)", []Value{{Int: 1}}, 10577349846663553072},
		{"cityHash64(u)", []Value{{Int: 1}}, 10577349846663553072},
		{"cityHash64(i)", []Value{{Int: minus1}}, 8055013221972926055},
		{"intHash64(i)", []Value{{Int: minus1}}, 14600443904207254319},
		{"cityHash64(a, b)", []Value{{Bytes: []byte("a")}, {Bytes: []byte("b")}}, 7468329322676821011},
		{"cityHash64(a)", []Value{{Bytes: []byte("a")}}, 2603192927274642682},
		{"i", []Value{{Int: minus1}}, 255},
	} {
		if got := k(c.expr).Eval(c.vals); got != c.want {
			t.Errorf("%s of %v = %d, want %d", c.expr, c.vals, got, c.want)
		}
	}
}
