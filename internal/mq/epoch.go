package mq

// Cursor is where a Replay starts: strictly after After, in the history named by Epoch.
type Cursor struct {
	// Epoch names the history After indexes (Event.Epoch of the event After came from). Empty
	// means the caller has no epoch: After is taken in the current history unchecked (Latest, the
	// zero position, and readers inside the process use it).
	Epoch string
	// After is the last position already seen; Latest means only records published from now on.
	After Position
}

// Reasons of a Reset.
const (
	// ResetTrimmed: history right after the requested position was removed (trimmed); records of
	// the table may have been among it.
	ResetTrimmed = "trimmed"
	// ResetEpoch: the requested position belongs to another history of the table (its stream was
	// recreated, the partition layout changed, or the data is new), so it says nothing about this
	// one.
	ResetEpoch = "epoch"
	// ResetAhead: the requested position is past the last record of the history, which never
	// held it (or lost it: an unsynced tail lost in a crash).
	ResetAhead = "ahead"
)
