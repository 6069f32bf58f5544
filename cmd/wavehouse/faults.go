//go:build wavehouse_faults && unix

package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
)

// faultFlags registers serve's --fault-kill-after. Only a binary built with -tags
// wavehouse_faults (the crash tests' build: gatewaybin.BuildWithFaults) has the flag; a
// production build has neither the flag nor a way to kill itself. The returned func gives the
// app options the flag asks for.
func faultFlags(fs *flag.FlagSet) func() ([]app.Option, error) {
	spec := fs.String("fault-kill-after", "", `"<point>:<n>": SIGKILL this process at writer fault point <point> `+
		`("inserted": after the inserts, before the plan is marked; "marked": after the mark, before the acks) of the n-th batch`)
	return func() ([]app.Option, error) {
		if *spec == "" {
			return nil, nil
		}
		point, count, ok := strings.Cut(*spec, ":")
		n, err := strconv.ParseInt(count, 10, 64)
		if !ok || point != string(writer.FaultInserted) && point != string(writer.FaultMarked) || err != nil || n < 1 {
			return nil, fmt.Errorf("--fault-kill-after %q: want inserted:<n> or marked:<n> with n >= 1", *spec)
		}
		var batches atomic.Int64
		return []app.Option{app.WithWriterFault(func(p writer.FaultPoint) {
			if string(p) == point && batches.Add(1) == n {
				// As an operator's kill -9 or the OOM killer would.
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is delivered asynchronously; never return into the ack path
			}
		})}, nil
	}
}
