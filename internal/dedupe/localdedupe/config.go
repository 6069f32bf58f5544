package localdedupe

import (
	"errors"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Config configures the Pebble-backed dedupe store (dedupe.local in the boot config).
type Config struct {
	// Dir is the directory holding the Pebble database. It is created when missing and must
	// not be shared with any other component. Required; the app passes <data_dir>/dedupe.
	Dir string
	// ResolveFromQueue has Commit return without waiting for an fsync (a background sync makes
	// it durable within SyncInterval) and keeps a mark index, from which ResolveMarks recovers
	// the commits a crash lost. Only for a store whose frames are published by the same
	// process's embedded queue, and ResolveMarks must then run at every open before the store
	// serves (docs/adr/0017).
	ResolveFromQueue bool
	// SyncInterval is the background sync's period with ResolveFromQueue; 0 means
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// ResolveMargin is how long after its mark's FrameUntil a claim may still be committed
	// (see DefaultResolveMargin); 0 means DefaultResolveMargin.
	ResolveMargin time.Duration
}

func (c Config) resolveMargin() time.Duration {
	if c.ResolveMargin > 0 {
		return c.ResolveMargin
	}
	return DefaultResolveMargin
}

// Validate reports every problem in c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("dedupe.local.dir: must be set to a directory (the app uses <data_dir>/dedupe)"))
	}
	return errors.Join(errs...)
}

// Deps holds the store's collaborators.
type Deps struct {
	// Clock decides expiry. Nil means dedupe.SystemClock.
	Clock dedupe.Clock
	// Logger receives Pebble's own messages (informational ones at debug level). Nil discards
	// them.
	Logger *slog.Logger
	// FS is the file system Pebble uses; nil means the disk. Tests give a crashable in-memory
	// one to lose what was not synced.
	FS vfs.FS
}
