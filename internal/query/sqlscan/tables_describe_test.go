package sqlscan

import "testing"

func TestTablesOfDescribe(t *testing.T) {
	for sql, want := range map[string]string{
		"DESCRIBE TABLE go_rows":       "go_rows",
		"desc t":                       "t",
		"DESCRIBE TABLE db1.t":         "db1.t",
		"DESCRIBE TABLE `odd name`":    "odd name",
		"DESCRIBE TABLE t FORMAT JSON": "t",
	} {
		got, sure := Tables(sql)
		if !sure || len(got) != 1 || got[0].String() != want {
			t.Errorf("Tables(%q) = %v, %v; want [%s], true", sql, got, sure, want)
		}
	}
	for _, sql := range []string{"DESCRIBE (SELECT * FROM t)", "DESCRIBE TABLE remote('h', db.t)", "DESCRIBE TABLE t, u", "DESCRIBE"} {
		if got, sure := Tables(sql); sure {
			t.Errorf("Tables(%q) = %v, sure; want unsure", sql, got)
		}
	}
}
