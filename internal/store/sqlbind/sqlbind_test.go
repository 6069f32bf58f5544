package sqlbind

import (
	"errors"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
)

func TestFind(t *testing.T) {
	sql := "SELECT '{no:String}', `{x:y}` /* {c:UInt8} */ -- {d:UInt8}\n FROM t WHERE a = {a:String} AND b IN {b : Array(DateTime('UTC'))}"
	phs, err := Find(sql)
	if err != nil {
		t.Fatal(err)
	}
	if len(phs) != 2 || phs[0].Name != "a" || phs[0].TypeName != "String" || phs[1].Name != "b" ||
		phs[1].TypeName != "Array(DateTime('UTC'))" {
		t.Fatalf("got %+v", phs)
	}
	if sql[phs[0].Start:phs[0].End] != "{a:String}" {
		t.Fatalf("bad offsets %+v", phs[0])
	}
}

func TestBindInjectionIsData(t *testing.T) {
	got, err := Bind("SELECT {s:String}, {n:UInt8}, {a:Array(Nullable(String))}", []store.Param{
		{Name: "s", Value: []byte(`"x' OR 1=1; DROP TABLE t; --\\"`)},
		{Name: "n", Value: []byte(`7`)},
		{Name: "a", Value: []byte(`["q'", null]`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT CAST('x\' OR 1=1; DROP TABLE t; --\\' AS String), CAST('7' AS UInt8), ` +
		`CAST([CAST('q\'' AS Nullable(String)), CAST(NULL AS Nullable(String))] AS Array(Nullable(String)))`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestBindErrors(t *testing.T) {
	for _, c := range []struct {
		sql    string
		params []store.Param
	}{
		{"SELECT {n:UInt8}", []store.Param{{Name: "n", Value: []byte(`300`)}}},
		{"SELECT {n:UInt8}", nil},
		{"SELECT {n:AggregateFunction(sum, UInt8)}", []store.Param{{Name: "n", Value: []byte(`1`)}}},
		{"SELECT 'unterminated {n:UInt8}", []store.Param{{Name: "n", Value: []byte(`1`)}}},
	} {
		if _, err := Bind(c.sql, c.params); !errors.Is(err, store.ErrRejected) {
			t.Errorf("Bind(%q) = %v, want ErrRejected", c.sql, err)
		}
	}
}

func TestNative(t *testing.T) {
	got, err := Native("SELECT {s:String}, {a:Array(String)}, {d:Nullable(Date)}", []store.Param{
		{Name: "s", Value: []byte(`"a\tb\\c"`)},
		{Name: "a", Value: []byte(`["x'y"]`)},
		{Name: "d", Value: []byte(`null`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["s"] != `a\tb\\c` || got["a"] != `['x\'y']` || got["d"] != `\N` {
		t.Fatalf("got %q", got)
	}
}

func TestAppendSettings(t *testing.T) {
	got := AppendSettings("SELECT 1 -- hi;", Int("readonly", 1), String("result_overflow_mode", "throw"))
	want := "SELECT 1 -- hi\n SETTINGS readonly=1, result_overflow_mode='throw'"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
