package localdedupe

import (
	"errors"
	"log/slog"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

// Config configures the Pebble-backed dedupe store (dedupe.local in the boot config).
type Config struct {
	// Dir is the directory holding the Pebble database. It is created when missing and must
	// not be shared with any other component. Required; the app passes <data_dir>/dedupe.
	Dir string
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
}
