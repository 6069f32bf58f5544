package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wavehouse/wavehouse/internal/query/pipes"
)

// settingsPoll is how often the settings directory is read again.
const settingsPoll = 2 * time.Second

// buildSettings loads the pipes under settings_dir/pipes and reloads them while the process
// runs, so an added or edited pipe is served without a restart. A directory that no longer
// loads keeps the previous pipes in force, and the problem is logged once.
func (a *App) buildSettings() (Component, error) {
	reg, err := pipes.NewRegistry(filepath.Join(a.cfg.SettingsDir, "pipes"))
	if err != nil {
		return nil, fmt.Errorf("settings_dir: %w", err)
	}
	a.pipes = reg
	run := func(ctx context.Context) error {
		t := time.NewTicker(settingsPoll)
		defer t.Stop()
		last := ""
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			msg := ""
			if err := reg.Reload(); err != nil {
				msg = err.Error()
			}
			if msg != last && msg != "" {
				a.log.Error("settings reload refused; the previous pipes stay in force", "error", msg)
			}
			last = msg
		}
	}
	return newComponent(compSettings, nil, run, nil), nil
}
