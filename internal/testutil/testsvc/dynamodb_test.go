package testsvc

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// dynamoCall makes one DynamoDB JSON API call with dummy credentials.
func dynamoCall(t *testing.T, endpoint, op, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Date", "20260101T000000Z")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0")
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestDynamoDBTableSurvivesRestart(t *testing.T) {
	t.Parallel()
	d := StartDynamoDB(t)
	table := UniqueName(t, "testsvc")
	code, body := dynamoCall(t, d.Endpoint, "CreateTable", `{"TableName":"`+table+`",
		"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`)
	if code != http.StatusOK {
		t.Fatalf("CreateTable: %d %s", code, body)
	}
	// A new table is CREATING until dynalite flips it to ACTIVE, even with
	// --createTableMs 0, as on real DynamoDB: wait for it.
	poll.Until(t, 30*time.Second, "the table ACTIVE", func() bool {
		_, body := dynamoCall(t, d.Endpoint, "DescribeTable", `{"TableName":"`+table+`"}`)
		return strings.Contains(body, `"TableStatus":"ACTIVE"`)
	})
	if code, body := dynamoCall(t, d.Endpoint, "PutItem", `{"TableName":"`+table+`","Item":{"pk":{"S":"a"}}}`); code != http.StatusOK {
		t.Fatalf("PutItem: %d %s", code, body)
	}
	getA := func() string {
		t.Helper()
		code, body := dynamoCall(t, d.Endpoint, "GetItem", `{"TableName":"`+table+`","Key":{"pk":{"S":"a"}},"ConsistentRead":true}`)
		if code != http.StatusOK {
			t.Fatalf("GetItem: %d %s", code, body)
		}
		return body
	}
	d.Stop(t)
	d.Start(t)
	if got := getA(); !strings.Contains(got, `"pk":{"S":"a"}`) {
		t.Fatalf("after Stop/Start GetItem = %s, want the item", got)
	}
	d.Kill(t)
	d.Start(t)
	if got := getA(); !strings.Contains(got, `"pk":{"S":"a"}`) {
		t.Fatalf("after Kill/Start GetItem = %s, want the item", got)
	}
}

func TestDynamoDBServerPrivateAndShared(t *testing.T) {
	t.Setenv("WH_TEST_DYNAMODB_ENDPOINT", "")
	private := DynamoDBServer(t)
	if code, body := dynamoCall(t, private.Endpoint, "ListTables", `{}`); code != http.StatusOK {
		t.Fatalf("ListTables: %d %s", code, body)
	}
	t.Setenv("WH_TEST_DYNAMODB_ENDPOINT", private.Endpoint)
	if got := DynamoDBServer(t); got.Endpoint != private.Endpoint {
		t.Fatalf("DynamoDBServer = %q, want the shared %q", got.Endpoint, private.Endpoint)
	}
}

// TestDynaliteSurvivesAnAbortedRequest proves dynalite keeps serving after a client dies in
// the middle of sending a request, as a gateway SIGKILLed by the chaos and idempotency suites
// does. dynalite 4.0.0 rethrows the request's "aborted" error and exits, which took the shared
// server down for every later test of a run; the guard it is started with keeps it up.
func TestDynaliteSurvivesAnAbortedRequest(t *testing.T) {
	t.Parallel()
	d := StartDynamoDB(t)
	host := strings.TrimPrefix(d.Endpoint, "http://")
	for range 3 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		// Headers and half of the announced body, then a reset instead of the rest.
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/x-amz-json-1.0\r\n"+
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Limit\":"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let dynalite start reading the body
		if err := c.(*net.TCPConn).SetLinger(0); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	// The aborts reached dynalite's request handler (else this proves nothing) ...
	logPath := filepath.Join(d.Dir, "dynalite.log")
	poll.Until(t, 10*time.Second, "dynalite to log an aborted request", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "a client aborted its request")
	})
	// ... and it still answers.
	if code, body := dynamoCall(t, d.Endpoint, "ListTables", `{}`); code != http.StatusOK {
		t.Fatalf("ListTables after aborted requests: %d %s", code, body)
	}
}
