package dedupe_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

// handle shows how a request handler uses a Store: reserve, do the work, then commit the
// response (or release the claim when the work certainly did not happen).
func handle(ctx context.Context, s dedupe.Store, key dedupe.Key, fingerprint string) (dedupe.Response, error) {
	res, err := s.Reserve(ctx, key, fingerprint, 30*time.Second)
	if err != nil {
		return dedupe.Response{}, err // 503 dedupe.unavailable
	}
	switch res.Outcome {
	case dedupe.OutcomeDuplicate:
		return res.Record.Response, nil // replayed, with Idempotent-Replayed: true
	case dedupe.OutcomeInFlight:
		return dedupe.Response{Status: 409}, nil // Retry-After: res.RetryAfter
	case dedupe.OutcomeMismatch:
		return dedupe.Response{Status: 422}, nil
	}
	resp := dedupe.Response{Status: 202, Body: []byte(`{"accepted":1}`)} // the real work goes here
	if err := s.Commit(ctx, key, res.Claim.Token, resp, 24*time.Hour); err != nil {
		return dedupe.Response{}, err
	}
	return resp, nil
}

func Example() {
	dir, _ := os.MkdirTemp("", "dedupe-example")
	defer os.RemoveAll(dir)
	s, err := localdedupe.New(localdedupe.Config{Dir: filepath.Join(dir, "dedupe")}, localdedupe.Deps{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(context.Background())

	ctx := context.Background()
	key := dedupe.Key{Tenant: "acme", Table: "events", ID: "order-1234"}
	for _, fp := range []string{"body-a", "body-a", "body-b"} {
		resp, err := handle(ctx, s, key, fp)
		fmt.Println(resp.Status, string(resp.Body), err)
	}
	// Output:
	// 202 {"accepted":1} <nil>
	// 202 {"accepted":1} <nil>
	// 422  <nil>
}
