//go:build !wavehouse_faults || !unix

package main

import (
	"flag"

	"github.com/wavehouse/wavehouse/internal/app"
)

// faultFlags registers no flag: fault injection exists only in a wavehouse_faults build (see
// faults.go).
func faultFlags(*flag.FlagSet) func() ([]app.Option, error) {
	return func() ([]app.Option, error) { return nil, nil }
}
