package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// counter reports how many rows of a table are queryable.
type counter interface {
	count(ctx context.Context) (int64, error)
}

// clickHouseHTTP runs small read queries against a ClickHouse HTTP endpoint.
type clickHouseHTTP struct {
	client *http.Client
	addr   string
}

func (c *clickHouseHTTP) query(ctx context.Context, sql string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addr+"/", strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse http %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}

func (c *clickHouseHTTP) queryInt(ctx context.Context, sql string) (int64, error) {
	s, err := c.query(ctx, sql)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// tableCounter counts a table's rows through ClickHouse HTTP.
type tableCounter struct {
	ch    *clickHouseHTTP
	table string // database-qualified
}

func (c tableCounter) count(ctx context.Context) (int64, error) {
	return c.ch.queryInt(ctx, "SELECT count() FROM "+c.table)
}

// parts returns the number of active parts of database.table.
func (c *clickHouseHTTP) parts(ctx context.Context, database, table string) (int64, error) {
	return c.queryInt(ctx, "SELECT count() FROM system.parts WHERE database = '"+database+"' AND table = '"+table+"' AND active")
}

// gatewayCounter counts a table's rows through the gateway's POST /v1/query.
type gatewayCounter struct {
	client *http.Client
	url    string
	table  string
}

func (c gatewayCounter) count(ctx context.Context) (int64, error) {
	body, _ := json.Marshal(map[string]string{"sql": "SELECT count() AS n FROM " + c.table})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.url, "/")+"/v1/query", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("gateway /v1/query %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return parseCount(raw)
}

// parseCount reads the first value of the first row of a ClickHouse-style JSON result
// ({"data":[{"n":"5"}]} or {"data":[[5]]}); numbers may be quoted (64-bit integers).
func parseCount(raw []byte) (int64, error) {
	var res struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Data) == 0 {
		return 0, fmt.Errorf("unexpected count result %.200q", raw)
	}
	var v json.RawMessage
	var obj map[string]json.RawMessage
	var arr []json.RawMessage
	switch {
	case json.Unmarshal(res.Data[0], &obj) == nil && len(obj) == 1:
		for _, x := range obj {
			v = x
		}
	case json.Unmarshal(res.Data[0], &arr) == nil && len(arr) >= 1:
		v = arr[0]
	default:
		return 0, fmt.Errorf("unexpected count row %.200q", res.Data[0])
	}
	s := strings.Trim(string(v), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected count value %.50q", v)
	}
	return n, nil
}

// createViaGateway runs DDL through the gateway's POST /v1/ops/sql as the operator (key) on the
// default tenant, the one the tool's anonymous requests act as.
func createViaGateway(ctx context.Context, client *http.Client, base, key, sql string) error {
	body, _ := json.Marshal(map[string]string{"sql": sql})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/v1/ops/sql?tenant=default", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gateway /v1/ops/sql %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return nil
}

// insertQueries returns the server's cumulative count of INSERT queries; with one part per insert
// (no partition key) its growth over a phase is the number of parts the phase created.
func insertQueries(ctx context.Context, ch *clickHouseHTTP) (int64, error) {
	if ch == nil {
		return 0, errors.New("bench: no clickhouse http address")
	}
	return ch.queryInt(ctx, "SELECT sum(value) FROM system.events WHERE event = 'InsertQuery'")
}
