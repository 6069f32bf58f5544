package localdedupe

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger routes Pebble's messages to slog. Fatalf keeps Pebble's own behaviour (the
// process exits), because Pebble calls it only for invariant violations it cannot continue
// from.
type pebbleLogger struct {
	log *slog.Logger
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Log(context.Background(), slog.LevelError+4, fmt.Sprintf(format, args...), "component", "pebble")
	pebble.DefaultLogger.Fatalf(format, args...)
}
