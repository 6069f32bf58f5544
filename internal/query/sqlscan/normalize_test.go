package sqlscan

import "testing"

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"SELECT 1":                               "SELECT 1",
		"  SELECT\n\t1 ;  ":                      "SELECT 1",
		"SELECT /* c */ 1 -- tail":               "SELECT 1",
		"SELECT/**/1":                            "SELECT 1",
		"SELECT 'a   b' ,  \"x  y\"":             "SELECT 'a   b' , \"x  y\"",
		"SELECT '-- not a comment'":              "SELECT '-- not a comment'",
		"select A from T":                        "select A from T",
		"SELECT 1 # c\n FROM t":                  "SELECT 1 FROM t",
		"SELECT 'unterminated   x  ":             "SELECT 'unterminated   x",
		"SELECT 1;;":                             "SELECT 1",
		"SELECT\r\n  count()\r\nFROM\r\n  t\r\n": "SELECT count() FROM t",
	}
	for in, want := range cases {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q; want %q", in, got, want)
		}
	}
	if Normalize("SELECT 'a b'") == Normalize("SELECT 'a  b'") {
		t.Error("Normalize merged whitespace inside a string literal")
	}
}
