package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/settings"
)

// ParseScopes parses a comma-separated scope list such as "ingest,query", refusing unknown and
// repeated scopes.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		switch {
		case sc == "":
			continue
		case !sc.Valid():
			errs = append(errs, fmt.Errorf("unknown scope %q (want ingest, query, stream or admin)", sc))
		case slices.Contains(out, sc):
			errs = append(errs, fmt.Errorf("scope %q given twice", sc))
		default:
			out = append(out, sc)
		}
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no scope given (want some of ingest, query, stream, admin)"))
	}
	return out, errors.Join(errs...)
}

// ParseTables parses a comma-separated table list, refusing invalid names.
func ParseTables(s string) ([]string, error) {
	var out []string
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		tb := strings.TrimSpace(part)
		switch {
		case tb == "":
		case !settings.ValidTableName(tb):
			errs = append(errs, fmt.Errorf("%q is not a table name", tb))
		default:
			out = append(out, tb)
		}
	}
	return out, errors.Join(errs...)
}

// ParseExpiry turns --expires into a time: a duration from now ("90d", "720h"), an RFC 3339 time
// or a date. Empty means never (zero time).
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := settings.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("expiry %q must be in the future", s)
		}
		return now.Add(d).UTC().Truncate(time.Second), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			if !t.After(now) {
				return time.Time{}, fmt.Errorf("expiry %q is in the past", s)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("expiry %q: want a duration (90d, 720h), an RFC 3339 time or a date (2027-03-01)", s)
}
