package request_test

import (
	"fmt"
	"strings"

	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/store"
)

func ExampleParse() {
	cols := []store.Column{
		store.NewColumn("ts", "DateTime", "", ""),
		store.NewColumn("user", "String", "", ""),
		store.NewColumn("n", "UInt64", "DEFAULT", "0"),
		store.NewColumn("note", "Nullable(String)", "", ""),
	}
	body := `{"user":"ann","ts":"2026-01-01T10:00:00Z","n":18446744073709551615}
{"ts":1767261600,"user":"bob","colour":"red"}
`
	res, herr := request.Parse("application/x-ndjson", "", strings.NewReader(body), cols, request.Limits{}, request.Options{Partial: true})
	if herr != nil {
		fmt.Println(herr.Status, herr.Code)
		return
	}
	fmt.Println(res.Accepted, res.Rejected, res.Total)
	for _, s := range res.Segments {
		fmt.Println(s.Columns)
		rows, _ := s.CanonicalRows()
		for _, r := range rows {
			fmt.Println(string(r))
		}
	}
	for _, e := range res.Errors {
		fmt.Println(e.Row, e.Column, e.Code)
	}
	_, herr = request.Parse("application/x-ndjson", "", strings.NewReader(body), cols, request.Limits{}, request.Options{})
	fmt.Println(herr.Status, herr.Code)
	// Output:
	// 1 1 2
	// [ts user n note]
	// ["2026-01-01 10:00:00","ann",18446744073709551615,null]
	// 1 colour unknown_column
	// 400 ingest.invalid_rows
}
