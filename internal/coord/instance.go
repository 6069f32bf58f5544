package coord

import (
	"fmt"
	"os"

	"github.com/google/uuid"
)

// DefaultInstance returns "<hostname>-<pid>-<random>", a holder identity
// unique to this process run. The app passes its instance id instead when it
// has one, so that metrics and the lease record name the same process.
func DefaultInstance() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
}
