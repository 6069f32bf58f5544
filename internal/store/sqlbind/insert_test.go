package sqlbind

import (
	"strings"
	"testing"
)

func TestInsertIntoQuotesEveryName(t *testing.T) {
	var q strings.Builder
	InsertInto(&q, "db`x", "t", []string{"a", "b`) VALUES (1", `c\`})
	want := "INSERT INTO `db\\`x`.`t` (`a`, `b\\`) VALUES (1`, `c\\\\`)"
	if got := q.String(); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
