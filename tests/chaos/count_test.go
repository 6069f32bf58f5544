package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// perRequestSQL groups what table holds by request (intDiv(id, rowsPerRequest)): distinct ids,
// ids stored more than once, and rows.
func perRequestSQL(table string) string {
	return fmt.Sprintf("SELECT toString(intDiv(id, %d)) AS b, toString(count()) AS ids, toString(countIf(c > 1)) AS dup, "+
		"toString(sum(c)) AS rows FROM (SELECT id, count() AS c FROM %s GROUP BY id) GROUP BY b", rowsPerRequest, table)
}

// stored is what ClickHouse holds of one request's rows.
type stored struct{ ids, dupIDs, rows int }

// reader runs perRequestSQL where the rows are stored.
type reader func(t *testing.T, table string) map[uint64]stored

// readThroughGateway reads through the gateway's /v1/query: the only way into an embedded chDB.
func readThroughGateway(api gatewaybin.Client) reader {
	return func(t *testing.T, table string) map[uint64]stored {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"sql": perRequestSQL(table), "format": "ndjson"})
		r := api.Do(t, http.MethodPost, "/v1/query", http.Header{"Content-Type": {"application/json"}}, b)
		if r.Status != http.StatusOK {
			t.Fatalf("counting %s: %s", table, r)
		}
		out := map[uint64]stored{}
		dec := json.NewDecoder(bytes.NewReader(r.Body))
		for dec.More() {
			var row struct{ B, Ids, Dup, Rows string }
			if err := dec.Decode(&row); err != nil {
				t.Fatalf("counting %s: decoding %.200q: %v", table, r.Body, err)
			}
			out[parseU(t, row.B)] = stored{ids: int(parseU(t, row.Ids)), dupIDs: int(parseU(t, row.Dup)), rows: int(parseU(t, row.Rows))}
		}
		return out
	}
}

// readFromServer reads straight from a ClickHouse server, bypassing the gateway.
func readFromServer(ch *testsvc.ClickHouse, database string) reader {
	return func(t *testing.T, table string) map[uint64]stored {
		t.Helper()
		res, err := ch.Query(t.Context(), perRequestSQL(database+"."+table)+" FORMAT TabSeparated")
		if err != nil {
			t.Fatalf("counting %s: %v", table, err)
		}
		out := map[uint64]stored{}
		sc := bufio.NewScanner(strings.NewReader(res))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 4 {
				continue
			}
			out[parseU(t, f[0])] = stored{ids: int(parseU(t, f[1])), dupIDs: int(parseU(t, f[2])), rows: int(parseU(t, f[3]))}
		}
		return out
	}
}

func parseU(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return n
}

// tally is the verdict's input: what the clients were told against what ClickHouse holds.
type tally struct {
	Requests      int // requests sent
	AckedRows     int // rows of acknowledged requests (unkeyed and keyed)
	KeyedRows     int // of them, rows of keyed requests
	Lost          int // acknowledged rows absent
	Duplicated    int // acknowledged rows stored more than once
	DupExtra      int // rows beyond the first copy, over acknowledged rows
	KeyedDup      int // of Duplicated, rows of keyed requests
	KeyedDupReqs  int // keyed requests with rows stored more than once
	UnknownRows   int // rows of requests without a 2xx
	UnknownStored int // of them, stored
	UnknownDup    int // of them, stored more than once
	Stray         int // rows of no request sent (must be 0)
	GaveUp        int // keyed requests never acknowledged
	lostExamples  []uint64
	dupExamples   []uint64 // acknowledged requests with rows stored more than once
}

// count compares the ledger with what the table holds.
func count(outcomes map[uint64]outcome, have map[uint64]stored) tally {
	var c tally
	c.Requests = len(outcomes)
	for b, o := range outcomes {
		s := have[b]
		switch o {
		case acked, keyedAcked:
			c.AckedRows += rowsPerRequest
			if o == keyedAcked {
				c.KeyedRows += rowsPerRequest
			}
			if s.ids < rowsPerRequest {
				c.Lost += rowsPerRequest - s.ids
				if len(c.lostExamples) < 5 {
					c.lostExamples = append(c.lostExamples, b)
				}
			}
			if s.dupIDs > 0 && len(c.dupExamples) < 5 {
				c.dupExamples = append(c.dupExamples, b)
			}
			c.Duplicated += s.dupIDs
			c.DupExtra += s.rows - s.ids
			if o == keyedAcked && s.dupIDs > 0 {
				c.KeyedDup += s.dupIDs
				c.KeyedDupReqs++
			}
		default:
			if o == keyedGaveUp {
				c.GaveUp++
			}
			c.UnknownRows += rowsPerRequest
			c.UnknownStored += s.ids
			c.UnknownDup += s.dupIDs
		}
	}
	for b, s := range have {
		if _, ok := outcomes[b]; !ok {
			c.Stray += s.rows
		}
	}
	slices.Sort(c.lostExamples)
	slices.Sort(c.dupExamples)
	return c
}

func (c tally) String() string {
	return fmt.Sprintf("%d requests; %d acknowledged rows (%d keyed): %d lost, %d stored more than once (%d extra rows, %d of keyed requests); "+
		"%d rows of unacknowledged requests, %d of them stored (%d more than once); %d keyed requests never acknowledged; %d stray rows",
		c.Requests, c.AckedRows, c.KeyedRows, c.Lost, c.Duplicated, c.DupExtra, c.KeyedDup, c.UnknownRows, c.UnknownStored, c.UnknownDup, c.GaveUp, c.Stray)
}
