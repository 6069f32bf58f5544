package sqlbind

import (
	"strconv"
	"strings"
)

// Setting is one name=value pair for a SETTINGS clause. Value is already a SQL literal.
type Setting struct {
	Name  string
	Value string
}

// Int returns an integer setting.
func Int(name string, v uint64) Setting { return Setting{Name: name, Value: strconv.FormatUint(v, 10)} }

// Float returns a float setting.
func Float(name string, v float64) Setting {
	return Setting{Name: name, Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

// String returns a string setting.
func String(name, v string) Setting { return Setting{Name: name, Value: Quote(v)} }

// AppendSettings appends a SETTINGS clause to the end of the statement sql, after removing a
// trailing semicolon. A statement that already has a SETTINGS clause is refused by the server,
// which keeps a caller from overriding limits.
func AppendSettings(sql string, settings ...Setting) string {
	if len(settings) == 0 {
		return sql
	}
	sql = strings.TrimRight(sql, " \t\r\n;")
	if i := strings.LastIndex(sql, "--"); i >= 0 && !strings.Contains(sql[i:], "\n") {
		sql += "\n"
	}
	var b strings.Builder
	b.WriteString(sql)
	b.WriteString(" SETTINGS ")
	for i, s := range settings {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Name)
		b.WriteByte('=')
		b.WriteString(s.Value)
	}
	return b.String()
}
