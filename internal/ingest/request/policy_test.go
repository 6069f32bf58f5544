package request

import (
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/policy"
	"github.com/wavehouse/wavehouse/internal/store"
)

// TestInsertPolicy: a forced column takes the claim's value when the row omits it and refuses
// another value; a row the filter rejects (also one leaving the filter's column to its default)
// is a row error; the checks also hold in CSV and with ?partial=true.
func TestInsertPolicy(t *testing.T) {
	cols := []store.Column{
		store.NewColumn("id", "UInt64", "", ""),
		store.NewColumn("owner", "String", "DEFAULT", "''"),
		store.NewColumn("region", "String", "DEFAULT", "''"),
	}
	f, err := policy.ParseFilter("region IN {claim:regions}")
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&policy.Table{Filter: f, Set: map[string]string{"owner": "sub"}}).Bind("t", cols, policy.Claims{"sub": "alice", "regions": []any{"eu"}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":1,"region":"eu"}
{"id":2,"owner":"alice","region":"eu"}
{"id":3,"owner":"bob","region":"eu"}
{"id":4,"region":"us"}
{"id":5}
`
	res, herr := Parse(ndjsonCT, "", strings.NewReader(body), cols, Limits{}, Options{Partial: true, Policy: b})
	if herr != nil {
		t.Fatal(herr)
	}
	if got := strings.Join(rowsOf(res), " | "); got != `id,owner,region: [1,"alice","eu"] | id,owner,region: [2,"alice","eu"]` {
		t.Errorf("accepted rows: %s", got)
	}
	codes := map[int]string{}
	for _, e := range res.Errors {
		codes[e.Row] = e.Code
	}
	if codes[2] != policy.RowForcedColumn || codes[3] != policy.RowViolation || codes[4] != policy.RowViolation || len(codes) != 3 {
		t.Errorf("row errors %+v: want row 2 forced_column, rows 3 and 4 policy_violation", res.Errors)
	}
	if _, herr := Parse("text/csv", "", strings.NewReader("id,owner,region\n1,bob,eu\n"), cols, Limits{}, Options{Policy: b}); herr == nil || !strings.Contains(herr.Message, "set from the token") {
		t.Errorf("a CSV row giving another owner: %v, want a forced_column refusal", herr)
	}
}
