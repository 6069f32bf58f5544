package split

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// streamState is a stream as a server's /jsz monitoring endpoint reports it.
type streamState struct {
	Name    string `json:"name"`
	Cluster *struct {
		Leader string `json:"leader"`
	} `json:"cluster"`
	State struct {
		Messages uint64 `json:"messages"`
		FirstSeq uint64 `json:"first_seq"`
		LastSeq  uint64 `json:"last_seq"`
	} `json:"state"`
}

// jszStreams returns the streams whose name starts with prefix, from one server's /jsz.
func jszStreams(ctx context.Context, monitorURL, prefix string) ([]streamState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, monitorURL+"/jsz?streams=true", nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /jsz: %d %s", resp.StatusCode, b)
	}
	var jsz struct {
		Accounts []struct {
			Streams []streamState `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.Unmarshal(b, &jsz); err != nil {
		return nil, fmt.Errorf("GET /jsz: %w", err)
	}
	var out []streamState
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if strings.HasPrefix(s.Name, prefix) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// ingestStream returns the ingest partition stream that holds the test's messages (the one
// with any message ever stored), as monitorURL reports it.
func ingestStream(t *testing.T, monitorURL, mqPrefix string) (streamState, bool) {
	t.Helper()
	streams, err := jszStreams(t.Context(), monitorURL, mqPrefix+"_in_")
	if err != nil {
		t.Logf("jsz: %v", err)
		return streamState{}, false
	}
	for _, s := range streams {
		if s.State.LastSeq > 0 {
			return s, true
		}
	}
	return streamState{}, false
}
