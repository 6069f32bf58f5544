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

	"github.com/wavehouse/wavehouse/internal/api"
	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/ingest/writer"
)

// faultFlags registers serve's --fault-kill-after. Only a binary built with -tags
// wavehouse_faults (the crash tests' build: gatewaybin.BuildWithFaults) has the flag; a
// production build has neither the flag nor a way to kill itself. The returned func gives the
// app options the flag asks for.
func faultFlags(fs *flag.FlagSet) func() ([]app.Option, error) {
	spec := fs.String("fault-kill-after", "", `"<point>:<n>": SIGKILL this process the n-th time it reaches <point>: `+
		`writer points "inserted" (after a batch's inserts, before its plan is marked) and "marked" (after the mark, before the acks); `+
		`keyed publish points "keyed_marked" (after a shared frame's claims are marked, before the frame is published) and `+
		`"keyed_published" (after a keyed request is published, before its idempotency record is committed); `+
		`and "commit_lost": the n-th keyed 2xx is not committed (as a crash takes an unsynced commit), its answer is sent, then the process is killed`)
	return func() ([]app.Option, error) {
		if *spec == "" {
			return nil, nil
		}
		point, count, ok := strings.Cut(*spec, ":")
		n, err := strconv.ParseInt(count, 10, 64)
		writerPoint := point == string(writer.FaultInserted) || point == string(writer.FaultMarked)
		apiPoint := point == string(api.FaultKeyedMarked) || point == string(api.FaultKeyedPublished) || point == string(api.FaultCommitLost)
		if !ok || !writerPoint && !apiPoint || err != nil || n < 1 {
			return nil, fmt.Errorf("--fault-kill-after %q: want <point>:<n> with point inserted, marked, keyed_marked, keyed_published or commit_lost and n >= 1", *spec)
		}
		var hits atomic.Int64
		kill := func(p string) {
			if p == point && hits.Add(1) == n {
				// As an operator's kill -9 or the OOM killer would.
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is delivered asynchronously; never return into the next step
			}
		}
		if point == string(api.FaultCommitLost) {
			var lost atomic.Bool
			return []app.Option{app.WithAPIFault(func(p api.FaultPoint) bool {
				switch {
				case p == api.FaultCommitLost && !lost.Load() && hits.Add(1) == n:
					lost.Store(true)
					return true
				case p == api.FaultKeyedAnswered && lost.Load():
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
				return false
			})}, nil
		}
		if apiPoint {
			return []app.Option{app.WithAPIFault(func(p api.FaultPoint) bool { kill(string(p)); return false })}, nil
		}
		return []app.Option{app.WithWriterFault(func(p writer.FaultPoint) { kill(string(p)) })}, nil
	}
}
