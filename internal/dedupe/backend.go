package dedupe

import (
	"crypto/rand"
	"fmt"
	"time"
)

// The helpers in this file hold the parts of the contract every backend implements the same
// way, so the backends differ only in how they store and condition records.

// Live reports whether rec still counts at now: a pending claim before the end of its lease, or
// a committed record before the end of its retention. Both ends are exclusive: at
// LeaseUntil or ExpiresAt the record is expired.
func (rec Record) Live(now time.Time) bool {
	switch rec.State {
	case StatePending:
		return now.Before(rec.LeaseUntil)
	case StateCommitted:
		return now.Before(rec.ExpiresAt)
	default:
		return false
	}
}

// LapsedMarkMemory is how long past its mark's end a sweep keeps a pending claim that was
// marked, so that a retry arriving that late is still told its earlier attempt may be enqueued
// (Reservation.MarkLapsed) instead of finding no record at all.
const LapsedMarkMemory = time.Hour

// Kept reports whether a sweep at now must keep rec: it is live, or it is a pending claim that
// was marked, until LapsedMarkMemory after its mark's end.
func (rec Record) Kept(now time.Time) bool {
	return rec.Live(now) || rec.State == StatePending && rec.Frame != "" && now.Before(rec.FrameUntil.Add(LapsedMarkMemory))
}

// Inherited returns the mark a claim replacing the expired record rec at now takes over: the
// frame of a pending claim still resolvable at now, else nothing.
func Inherited(rec Record, now time.Time) (frame string, until time.Time) {
	if rec.State == StatePending && rec.Frame != "" && now.Before(rec.FrameUntil) {
		return rec.Frame, rec.FrameUntil
	}
	return "", time.Time{}
}

// MarkLapsed reports whether the expired record rec at now is a pending claim whose mark can no
// longer be resolved: a claim replacing it cannot tell whether its request was enqueued.
func MarkLapsed(rec Record, now time.Time) bool {
	return rec.State == StatePending && rec.Frame != "" && !now.Before(rec.FrameUntil)
}

// CheckMark validates the arguments of Store.Mark.
func CheckMark(frame string, claims []Owned) error {
	if frame == "" {
		return fmt.Errorf("%w: empty frame id", ErrInvalid)
	}
	for _, c := range claims {
		if err := CheckRelease(c.Key, c.Token); err != nil {
			return err
		}
	}
	return nil
}

// Classify returns the Reservation a Reserve with fingerprint gets when it finds the live
// record rec at now. Callers check rec.Live(now) first.
func Classify(rec Record, fingerprint string, now time.Time) Reservation {
	res := Reservation{Record: rec}
	switch {
	case rec.Fingerprint != fingerprint:
		res.Outcome = OutcomeMismatch
	case rec.State == StateCommitted:
		res.Outcome = OutcomeDuplicate
	default:
		res.Outcome = OutcomeInFlight
	}
	if rec.State == StatePending {
		res.RetryAfter = max(rec.LeaseUntil.Sub(now), time.Millisecond)
	}
	return res
}

// NewToken returns a fresh random claim token.
func NewToken() string {
	return rand.Text()
}

// CheckReserve validates the arguments of Store.Reserve.
func CheckReserve(key Key, lease time.Duration) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if lease <= 0 {
		return fmt.Errorf("%w: lease %v is not positive", ErrInvalid, lease)
	}
	return nil
}

// CheckCommit validates the arguments of Store.Commit.
func CheckCommit(key Key, token string, resp Response, retention time.Duration) error {
	if err := CheckRelease(key, token); err != nil {
		return err
	}
	if retention <= 0 {
		return fmt.Errorf("%w: retention %v is not positive", ErrInvalid, retention)
	}
	if resp.Status < 100 || resp.Status > 999 {
		return fmt.Errorf("%w: response status %d", ErrInvalid, resp.Status)
	}
	return nil
}

// CheckRelease validates the arguments of Store.Release.
func CheckRelease(key Key, token string) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w: empty claim token", ErrInvalid)
	}
	return nil
}
