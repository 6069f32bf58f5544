package chformat

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// chHTTP runs sql on the server's HTTP interface with the given URL parameters and returns the
// body, failing the test on any status but 200.
func chHTTP(t *testing.T, ch *testsvc.ClickHouse, sql string, params url.Values) []byte {
	t.Helper()
	if ch.HTTPAddr == "" {
		t.Fatal("ClickHouse HTTP address unknown (set WH_TEST_CLICKHOUSE_HTTP_ADDR)")
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ch.HTTPAddr+"/?"+params.Encode(), strings.NewReader(sql))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", sql, resp.StatusCode, body)
	}
	return body
}

// compact is a JSONCompact answer: column names and types, and the rows' raw values.
type compact struct {
	Meta []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"meta"`
	Data [][]json.RawMessage `json:"data"`
}

func (c compact) names() (names, types []string) {
	for _, m := range c.Meta {
		names, types = append(names, m.Name), append(types, m.Type)
	}
	return names, types
}

// canonicalRows canonicalises the server's own JSON rows with chtype, the form the decoders
// must produce. FixedString values lose their trailing NUL padding first: chtype's canonical
// FixedString is the string as given, which the server pads (AppendCanonicalRowBinary drops
// the padding, as documented there).
func canonicalRows(t *testing.T, body []byte) (compact, []byte) {
	t.Helper()
	var c compact
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("JSONCompact answer: %v\n%s", err, body)
	}
	types := make([]*chtype.Type, len(c.Meta))
	for i, m := range c.Meta {
		tp, err := chtype.Parse(m.Type)
		if err != nil {
			t.Fatal(err)
		}
		types[i] = tp
	}
	var out []byte
	for r, row := range c.Data {
		out = append(out, '[')
		for i, raw := range row {
			if i > 0 {
				out = append(out, ',')
			}
			if types[i].Base().Kind == chtype.FixedString {
				for bytes.HasSuffix(raw, []byte(`\u0000"`)) {
					raw = append(raw[:len(raw)-7:len(raw)-7], '"')
				}
			}
			var err error
			if out, err = types[i].AppendCanonical(out, raw); err != nil {
				t.Fatalf("row %d column %s: canonicalising the server's %s: %v", r, c.Meta[i].Name, raw, err)
			}
		}
		out = append(out, ']', '\n')
	}
	return c, out
}

// diffLines reports the first differing line of two row dumps.
func diffLines(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			t.Fatalf("%s: line %d differs\n got: %s\nwant: %s", what, i, gl, wl)
		}
	}
}
