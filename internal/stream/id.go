package stream

import (
	"errors"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// An event id is "<epoch>-<seq>-<index>": the epoch of the queue history
// the position indexes (mq.Event.Epoch: it changes when the table's stream
// is recreated, the partition count changes or the data is new), then the
// record's mq.Position. The epoch is lower-case letters and digits.

// legacyEpoch stands for the epoch of an id without one (the "<seq>-<index>"
// form of earlier releases): it matches no real epoch, so such an id gets a
// reset instead of being read in a history it may not belong to.
const legacyEpoch = "legacy"

var errInvalidID = errors.New("stream: invalid event id")

// parseID parses a Last-Event-ID or since value: "0" (all retained
// history, no epoch), an id, or an id of the form before epochs.
func parseID(s string) (mq.Cursor, error) {
	if s == "0" {
		return mq.Cursor{}, nil
	}
	parts := strings.Split(s, "-")
	switch len(parts) {
	case 1, 2: // "<seq>" or "<seq>-<index>": no epoch
		p, err := mq.ParsePosition(s)
		if err != nil {
			return mq.Cursor{}, errInvalidID
		}
		return mq.Cursor{Epoch: legacyEpoch, After: p}, nil
	case 3:
		if !validEpoch(parts[0]) {
			return mq.Cursor{}, errInvalidID
		}
		seq, err := strconv.ParseUint(parts[1], 10, 64)
		if err != nil {
			return mq.Cursor{}, errInvalidID
		}
		idx, err := strconv.ParseUint(parts[2], 10, 32)
		if err != nil {
			return mq.Cursor{}, errInvalidID
		}
		return mq.Cursor{Epoch: parts[0], After: mq.Position{Seq: seq, Index: uint32(idx)}}, nil
	}
	return mq.Cursor{}, errInvalidID
}

func validEpoch(e string) bool {
	if e == "" || len(e) > 32 {
		return false
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// appendID appends the id of position p of history epoch.
func appendID(b []byte, epoch string, p mq.Position) []byte {
	b = append(b, epoch...)
	b = append(b, '-')
	b = strconv.AppendUint(b, p.Seq, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, uint64(p.Index), 10)
}

func formatID(epoch string, p mq.Position) string { return string(appendID(nil, epoch, p)) }
