package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/logging"
)

func runServe(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (default $WH_CONFIG; none: built-in defaults)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
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
	a, err := app.New(cfg, log)
	if err != nil {
		log.Error("boot failed", "error", err)
		return 1
	}
	if err := a.Run(ctx); err != nil {
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
