package integration

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestIngestTextRoundTrip has ClickHouse export the rows of many types in its own CSV and
// TabSeparated formats, with and without names, and ingests each export unchanged into a fresh
// copy of the table under each header mode. Per case: the export with one bad row appended is
// refused as a whole (400 naming the row, its line, the column and the code), then accepted with
// ?partial=true minus that row, and the copy reads back identical to the original.
func TestIngestTextRoundTrip(t *testing.T) {
	g := backendGateway(t, storeClickHouse, mqEmbedded, nil)
	r := readerFor(g)
	ch := &testsvc.ClickHouse{NativeAddr: g.cfg.CHAddr, HTTPAddr: g.cfg.CHHTTPAddr}
	g.sql(t, typesDDL("types", false))
	rows := typedRows(false)
	var nd strings.Builder
	for _, row := range rows {
		nd.WriteString(row.in + "\n")
	}
	requireCommitted(t, g.ingest(t, "types", "wait=committed", ctNDJSON, []byte(nd.String())), len(rows))
	want := r.selectRows(t, typesSelect(false), "types")
	if len(want) != len(rows) {
		t.Fatalf("original table holds %d rows, want %d", len(want), len(rows))
	}

	tests := []struct {
		name, export, ct string
	}{
		{"csv_present", "CSVWithNames", "text/csv; header=present"},
		{"csv_absent", "CSV", "text/csv; header=absent"},
		{"csv_auto_names", "CSVWithNames", "text/csv"},
		{"csv_auto_data", "CSV", "text/csv; header=auto"},
		{"tsv_present", "TabSeparatedWithNames", "text/tab-separated-values; header=present"},
		{"tsv_absent", "TabSeparated", "text/tab-separated-values; header=absent"},
		{"tsv_auto_names", "TabSeparatedWithNames", "text/tab-separated-values"},
		{"tsv_auto_data", "TabSeparated", "text/tab-separated-values; header=auto"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := ch.Query(t.Context(), fmt.Sprintf("SELECT * FROM %s.types ORDER BY id FORMAT %s", g.cfg.CHDatabase, tc.export))
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			sep := ","
			if strings.HasPrefix(tc.name, "tsv") {
				sep = "\t"
			}
			// The last row (r7) again, as r9 with u = -1: out of range for UInt64.
			lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			last := lines[len(lines)-1]
			bad := strings.Replace(strings.Replace(last, "r7", "r9", 1), sep+"7"+sep+"-7"+sep, sep+"-1"+sep+"-7"+sep, 1)
			if bad == last || !strings.Contains(bad, "r9") {
				t.Fatalf("cannot make a bad row of %q", last)
			}
			badLine := strings.Count(body, "\n") + 1
			sent := []byte(body + bad + "\n")
			table := "types_" + tc.name
			g.sql(t, typesDDL(table, false))

			e := requireError(t, "atomic", g.ingest(t, table, "", tc.ct, sent), http.StatusBadRequest, "ingest.invalid_rows")
			wantErr := rowError{Row: len(rows), Line: badLine, Column: "u", Code: "out_of_range"}
			if len(e.Details.Errors) != 1 || e.Details.Total != len(rows)+1 || !sameRowError(e.Details.Errors[0], wantErr) {
				t.Fatalf("atomic: %+v, want total %d and one error %+v", e, len(rows)+1, wantErr)
			}
			resp := g.ingest(t, table, "partial=true&wait=committed", tc.ct, sent)
			var acc struct {
				Accepted, Rejected int
				Errors             []rowError
			}
			resp.JSON(t, &acc)
			if resp.Status != http.StatusOK || acc.Accepted != len(rows) || acc.Rejected != 1 || len(acc.Errors) != 1 || !sameRowError(acc.Errors[0], wantErr) {
				t.Fatalf("partial: %s, want 200 with %d accepted and %+v", resp, len(rows), wantErr)
			}
			got := r.selectRows(t, typesSelect(false), table)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s read back\n%v\nwant\n%v", table, got, want)
			}
		})
	}
}

func sameRowError(got, want rowError) bool {
	return got.Row == want.Row && got.Line == want.Line && got.Column == want.Column && got.Code == want.Code && got.Message != ""
}
