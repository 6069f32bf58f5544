package sqlscan

import (
	"slices"
	"testing"
)

func TestSplitFormat(t *testing.T) {
	cases := []struct{ in, stmt, format string }{
		{"SELECT 1", "SELECT 1", ""},
		{"SELECT 1 FORMAT JSON", "SELECT 1", "JSON"},
		{"SELECT 1 \nFORMAT JSONEachRow;", "SELECT 1", "JSONEachRow"},
		{"SELECT 1 format TSV ; -- c\n", "SELECT 1", "TSV"},
		{"SELECT 1 FORMAT `Native`", "SELECT 1", "Native"},
		{"SELECT 'FORMAT JSON'", "SELECT 'FORMAT JSON'", ""},
		{"SELECT * FROM (SELECT 1 FORMAT JSON)", "SELECT * FROM (SELECT 1 FORMAT JSON)", ""},
		{"SELECT format FROM t", "SELECT format FROM t", ""},
		{"SELECT 1 FORMAT JSON FORMAT CSV", "SELECT 1 FORMAT JSON", "CSV"},
		{"SELECT 'x", "SELECT 'x", ""},
	}
	for _, c := range cases {
		stmt, format := SplitFormat(c.in)
		if stmt != c.stmt || format != c.format {
			t.Errorf("SplitFormat(%q) = (%q, %q), want (%q, %q)", c.in, stmt, format, c.stmt, c.format)
		}
	}
}

func TestLeadingKeyword(t *testing.T) {
	for in, want := range map[string]string{
		"select 1": "SELECT", "/* c */ (SELECT 1)": "SELECT", "  create table x": "CREATE", "1": "", "'a": "",
	} {
		if got := LeadingKeyword(in); got != want {
			t.Errorf("LeadingKeyword(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsWriteKeyword("CREATE") || IsWriteKeyword("SELECT") {
		t.Error("IsWriteKeyword")
	}
}

func TestSelectCalls(t *testing.T) {
	names, ok := SelectCalls("SELECT displayName(), version(), revision(), timezone()")
	if !ok || !slices.Equal(names, []string{"displayName", "version", "revision", "timezone"}) {
		t.Errorf("hello: %v %v", names, ok)
	}
	if names, ok := SelectCalls("select version();"); !ok || !slices.Equal(names, []string{"version"}) {
		t.Errorf("version: %v %v", names, ok)
	}
	for _, in := range []string{"SELECT 1", "SELECT version() FROM t", "SELECT version(1)", "SELECT version(),", "SELECT version() AS v", "SELECT"} {
		if _, ok := SelectCalls(in); ok {
			t.Errorf("SelectCalls(%q) accepted", in)
		}
	}
}
