package gatewaybin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// Response is a whole HTTP answer of the gateway.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// String is the status and the trimmed body, for failure messages.
func (r Response) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

// OK reports a 2xx status.
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// APIError is the JSON body of every error answer of the gateway.
type APIError struct {
	Code      string          `json:"code"`
	Error     string          `json:"error"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details"`
}

// APIError decodes the body as an error body (the zero value when it is not one).
func (r Response) APIError() APIError {
	var e APIError
	_ = json.Unmarshal(r.Body, &e)
	return e
}

// Code returns the "code" of a JSON error body, or "".
func (r Response) Code() string { return r.APIError().Code }

// JSON decodes the body into v, numbers as json.Number; a body that does not decode fails the
// test.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", r.Body, err)
	}
}

// Client sends requests to one listener of a gateway. It is safe for concurrent use.
type Client struct {
	// Base is the listener's base URL (http://host:port); request paths are appended to it.
	Base string
	// HTTP sends the requests.
	HTTP *http.Client
}

// Send sends one request with header and body (nil sends none) and returns the open answer,
// which the caller closes.
func (c Client) Send(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return c.HTTP.Do(req)
}

// Try sends one request and reads the whole answer.
func (c Client) Try(ctx context.Context, method, path string, header http.Header, body []byte) (Response, error) {
	resp, err := c.Send(ctx, method, path, header, body)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("reading the answer (%d): %w", resp.StatusCode, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Do is Try bounded by the test's context; a transport error fails the test.
func (c Client) Do(t testing.TB, method, path string, header http.Header, body []byte) Response {
	t.Helper()
	r, err := c.Try(t.Context(), method, path, header, body)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, c.Base, path, err)
	}
	return r
}
