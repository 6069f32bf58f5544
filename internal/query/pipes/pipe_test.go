package pipes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const topUsers = `-- Top users of one day.
-- @param day Date required The day to report.
-- @param limit UInt32 default 10 How many users.
-- @param label Nullable(String)
-- @param ids Array(UInt64) default [1, 2]
-- @ttl 30s
-- @tables events, users
SELECT user, count() AS n FROM events
WHERE toDate(ts) = {day:Date} AND id IN {ids:Array(UInt64)} AND ({label:Nullable(String)} IS NULL OR user = {label: Nullable(String)})
GROUP BY user ORDER BY n DESC LIMIT {limit:UInt32}
`

func TestParseReadsTheHeader(t *testing.T) {
	p, err := Parse("top_users", topUsers)
	if err != nil {
		t.Fatal(err)
	}
	if p.Description != "Top users of one day." || p.TTL != 30*time.Second || strings.Join(p.Tables, ",") != "events,users" {
		t.Fatalf("header: %+v", p)
	}
	if !strings.HasPrefix(p.SQL, "SELECT user") {
		t.Fatalf("SQL kept the header: %q", p.SQL)
	}
	want := []struct {
		name, typ, def, desc string
		required             bool
	}{
		{"day", "Date", "", "The day to report.", true},
		{"limit", "UInt32", "10", "How many users.", false},
		{"label", "Nullable(String)", "null", "", false},
		{"ids", "Array(UInt64)", "[1,2]", "", false},
	}
	if len(p.Params) != len(want) {
		t.Fatalf("params: %+v", p.Params)
	}
	for i, w := range want {
		got := p.Params[i]
		if got.Name != w.name || got.Type.Name != w.typ || string(got.Default) != w.def || got.Description != w.desc || got.Required != w.required {
			t.Errorf("param %d = {%s %s %s %q %v}, want %+v", i, got.Name, got.Type.Name, got.Default, got.Description, got.Required, w)
		}
	}
}

func TestParseRefusesBadDefinitions(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"write":              {"INSERT INTO t VALUES (1)", "line 1"},
		"write behind WITH":  {"-- @param x UInt8 required\nWITH 1 AS y ALTER TABLE t DELETE WHERE {x:UInt8}", "line 2"},
		"undeclared":         {"SELECT {x:UInt8}", "{x:UInt8} has no @param"},
		"type mismatch":      {"-- @param x UInt8 required\nSELECT {x:String}", "does not match"},
		"unused":             {"-- @param x UInt8 required\nSELECT 1", "x is not used"},
		"bad default":        {"-- @param x UInt8 default 300\nSELECT {x:UInt8}", "default 300"},
		"no default":         {"-- @param x UInt8\nSELECT {x:UInt8}", "say required or give a default"},
		"reserved":           {"-- @param format String required\nSELECT {format:String}", "reserved"},
		"unknown directive":  {"-- @cache 1\nSELECT 1", "unknown directive @cache"},
		"bad ttl":            {"-- @ttl soon\nSELECT 1", "@ttl"},
		"duplicate":          {"-- @param x UInt8 required\n-- @param x UInt8 required\nSELECT {x:UInt8}", "declared twice"},
		"empty":              {"-- @ttl 1s\n", "no SQL"},
		"two statements":     {"SELECT 1; DROP TABLE t", "line 1"},
		"unparseable type":   {"-- @param x Array(UInt8 required\nSELECT 1", "@param"},
		"unsupported type":   {"-- @param x AggregateFunction(sum, UInt8) required\nSELECT 1", "cannot be a parameter"},
		"missing param name": {"-- @param\nSELECT 1", "@param"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("p", tc.src)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestBindValidatesByTypeAndFillsDefaults(t *testing.T) {
	p, err := Parse("top_users", topUsers)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Bind(map[string]Value{
		"day":   {Raw: []byte("2024-01-02"), Text: true},
		"ids":   {Raw: []byte("[18446744073709551615]"), Text: true},
		"label": {Raw: []byte(`"x' OR 1=1 --"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"day": `"2024-01-02"`, "limit": "10", "label": `"x' OR 1=1 --"`, "ids": "[18446744073709551615]"}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	for name, tc := range map[string]struct {
		values    map[string]Value
		code, prm string
	}{
		"missing":       {map[string]Value{}, "pipe.missing_param", "day"},
		"bad date":      {map[string]Value{"day": {Raw: []byte("yesterday"), Text: true}}, "pipe.invalid_param", "day"},
		"out of range":  {map[string]Value{"day": {Raw: []byte(`"2024-01-02"`)}, "limit": {Raw: []byte("-1")}}, "pipe.invalid_param", "limit"},
		"sql as number": {map[string]Value{"day": {Raw: []byte(`"2024-01-02"`)}, "limit": {Raw: []byte("1 OR 1=1"), Text: true}}, "pipe.invalid_param", "limit"},
		"unknown":       {map[string]Value{"day": {Raw: []byte(`"2024-01-02"`)}, "zzz": {Raw: []byte("1")}}, "pipe.unknown_param", "zzz"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Bind(tc.values)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Param != tc.prm || !strings.Contains(err.Error(), tc.prm) {
				t.Fatalf("err = %v, want %s naming %s", err, tc.code, tc.prm)
			}
		})
	}
}

func TestLoadReportsEveryBrokenFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "good.sql", "SELECT 1")
	write(t, dir, "bad1.sql", "DROP TABLE t")
	write(t, dir, "bad2.sql", "SELECT {x:UInt8}")
	write(t, dir, "notes.txt", "ignored")
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "bad1.sql") || !strings.Contains(err.Error(), "bad2.sql") {
		t.Fatalf("err = %v, want both broken files named", err)
	}
	s, err := Load(filepath.Join(dir, "missing"))
	if err != nil || s.Len() != 0 {
		t.Fatalf("missing dir: %v, %d pipes", err, s.Len())
	}
}

func TestRegistryReloadSwapsAtomicallyAndKeepsTheOldSetOnError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.sql", "SELECT 1")
	r, err := NewRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Pipes("t").Get("a"); !ok {
		t.Fatal("a not loaded")
	}
	write(t, dir, "b.sql", "SELECT 2")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				s := r.Pipes("t")
				if _, ok := s.Get("a"); !ok {
					t.Error("a set without a was visible")
					return
				}
			}
		})
	}
	for range 20 {
		if err := r.Reload(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if r.Current().Len() != 2 {
		t.Fatalf("after reload: %d pipes", r.Current().Len())
	}
	write(t, dir, "c.sql", "DELETE FROM t WHERE 1")
	if err := r.Reload(); err == nil {
		t.Fatal("a broken directory reloaded")
	}
	if _, ok := r.Current().Get("b"); !ok || r.Current().Len() != 2 {
		t.Fatal("a failed reload replaced the current set")
	}
}

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}
