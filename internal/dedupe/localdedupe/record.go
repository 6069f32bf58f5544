package localdedupe

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// recordVersion is the version of the stored value layout; a value with another version is
// treated as corrupt rather than guessed at.
const recordVersion = 1

// stored is the value kept under each key. Times are Unix nanoseconds.
type stored struct {
	Version     int    `json:"v"`
	State       int    `json:"s"`
	Token       string `json:"t,omitempty"`
	Fingerprint string `json:"f"`
	LeaseUntil  int64  `json:"l,omitempty"`
	ExpiresAt   int64  `json:"e,omitempty"`
	Status      int    `json:"c,omitempty"`
	Body        []byte `json:"b,omitempty"`
	Frame       string `json:"fr,omitempty"`
	FrameUntil  int64  `json:"fu,omitempty"`
	// Resolved marks a claim ResolveMarks found stored by the queue: it answers like a
	// committed record would, so another request reusing the key is refused.
	Resolved bool `json:"rs,omitempty"`
}

func (s stored) record() dedupe.Record {
	rec := dedupe.Record{
		State:       dedupe.State(s.State),
		Fingerprint: s.Fingerprint,
		Response:    dedupe.Response{Status: s.Status, Body: s.Body},
	}
	if s.LeaseUntil != 0 {
		rec.LeaseUntil = time.Unix(0, s.LeaseUntil)
	}
	if s.ExpiresAt != 0 {
		rec.ExpiresAt = time.Unix(0, s.ExpiresAt)
	}
	if s.Frame != "" {
		rec.Frame, rec.FrameUntil = s.Frame, time.Unix(0, s.FrameUntil)
	}
	return rec
}

func decode(b []byte) (stored, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return stored{}, fmt.Errorf("decode record: %w", err)
	}
	if s.Version != recordVersion {
		return stored{}, fmt.Errorf("decode record: unknown version %d", s.Version)
	}
	return s, nil
}

func encode(s stored) []byte {
	s.Version = recordVersion
	b, err := json.Marshal(s)
	if err != nil {
		// stored holds only strings, integers and bytes, which always marshal.
		return nil
	}
	return b
}
