package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/memlimit"
)

// bootMemoryLimit sets the Go runtime's soft memory limit (docs/operations.md, "Memory budget")
// and logs what it chose. A cgroup that cannot be read is taken as no cgroup limit (the
// setting or the default applies): worth a warning, not a failed boot.
func bootMemoryLimit(cfg config.Config, log *slog.Logger) {
	d, err := memlimit.Boot(memoryConfig(cfg), os.Getenv("GOMEMLIMIT"))
	if err != nil {
		log.Warn("cannot read the cgroup memory limit", "error", err)
	}
	limit := "none"
	if d.Limit != math.MaxInt64 {
		limit = strconv.FormatInt(d.Limit, 10)
	}
	log.Info("memory limit", "gomemlimit_bytes", limit, "source", d.Source, "cgroup_limit_bytes", d.Cgroup)
}

// memoryConfig is the memory block of cfg for memlimit; the engine counts when this process
// runs the store with the ClickHouse engine in it.
func memoryConfig(cfg config.Config) memlimit.Config {
	return memlimit.Config{Limit: cfg.Memory.Limit, CgroupPercent: cfg.Memory.CgroupPercent,
		Engine: cfg.Store.Backend == "chdb" && cfg.Roles.Uses(config.ComponentStore)}
}

func runServe(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (default $WH_CONFIG; none: built-in defaults)")
	addrFile := fs.String("listen-addr-file", "", "once every component has started, write the bound listener addresses to this file as JSON (for listeners on port 0)")
	faults := faultFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	opts, err := faults()
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 2
	}
	cfg, err := loadValid(configPath(*path), stderr)
	if err != nil {
		return 1
	}
	log, err := logging.New(stderr, logging.Options{Level: cfg.Log.Level, Format: cfg.Log.Format})
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	bootMemoryLimit(cfg, log)
	a, err := app.New(cfg, log, opts...)
	if err != nil {
		log.Error("boot failed", "error", err)
		return 1
	}
	// The address file is written once every component has started; failing to write it stops
	// the process, since whoever asked for it cannot find the listeners otherwise.
	runCtx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		addrErr error
	)
	if *addrFile != "" {
		wg.Go(func() {
			select {
			case <-a.Started():
			case <-runCtx.Done():
				return
			}
			if addrErr = writeListenAddrs(*addrFile, a.APIAddr(), a.OpsAddr()); addrErr != nil {
				cancel()
			}
		})
	}
	err = a.Run(runCtx)
	cancel()
	wg.Wait()
	if addrErr != nil {
		log.Error("wavehouse stopped: cannot write the --listen-addr-file", "path", *addrFile, "error", addrErr)
		return 1
	}
	if err != nil {
		var fe *app.FatalError
		if errors.As(err, &fe) {
			log.Error("wavehouse stopped on a component failure", "component", fe.Component, "error", fe.Err)
		} else {
			log.Error("wavehouse stopped uncleanly", "error", err)
		}
		return 1
	}
	log.Info("wavehouse stopped")
	return 0
}

// listenAddrs is the content of the --listen-addr-file: the addresses the listeners bound.
type listenAddrs struct {
	// Server is the API listener's address; empty in a process without the api role.
	Server string `json:"server,omitempty"`
	// Ops is the ops listener's address.
	Ops string `json:"ops"`
}

// writeListenAddrs writes the bound addresses to path through a temporary file renamed into
// place, so a reader sees either no file or the whole of it.
func writeListenAddrs(path, server, ops string) error {
	b, err := json.Marshal(listenAddrs{Server: server, Ops: ops})
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// configPath returns the --config flag, else $WH_CONFIG.
func configPath(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(config.EnvConfigPath)
}

// loadValid loads and validates the config, printing every problem to stderr.
func loadValid(path string, stderr io.Writer) (config.Config, error) {
	cfg, err := config.Load(path)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n")
		for _, line := range splitErrors(err) {
			fmt.Fprintf(stderr, "  - %s\n", line)
		}
		return config.Config{}, err
	}
	return cfg, nil
}

// splitErrors flattens errors.Join trees into one message per problem.
func splitErrors(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []string{err.Error()}
}
