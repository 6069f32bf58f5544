package sqlscan

import "strings"

// Normalize returns sql for use in a cache key: comments removed, every run of
// whitespace and comments outside literals and quoted identifiers collapsed to one
// space, leading and trailing space and trailing semicolons dropped. Literals,
// identifiers and letter case are kept, so two texts normalise alike only if the server
// would read them alike. Text that does not tokenize is returned trimmed.
func Normalize(sql string) string {
	spans, err := scan(sql)
	if err != nil {
		return strings.TrimSpace(sql)
	}
	for len(spans) > 0 {
		last := spans[len(spans)-1]
		if last.gap || sql[last.start:last.end] == ";" {
			spans = spans[:len(spans)-1]
			continue
		}
		break
	}
	var b strings.Builder
	b.Grow(len(sql))
	for i, s := range spans {
		if s.gap {
			if i > 0 {
				b.WriteByte(' ')
			}
			continue
		}
		b.WriteString(sql[s.start:s.end])
	}
	return b.String()
}
