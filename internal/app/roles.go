package app

import "github.com/wavehouse/wavehouse/internal/config"

// The components a process can run. Layers come first so that features find them up; the API
// listener comes last so that no request arrives before everything it needs has started.
const (
	compOps      = "ops"
	compStore    = "store"
	compMQ       = "mq"
	compCache    = "cache"
	compDedupe   = "dedupe"
	compCoord    = "coord"
	compSettings = "settings"
	compIngest   = "ingest"
	compSweeper  = "sweeper"
	compAPI      = "api"
)

// startOrder is the one place that orders components: start in this order, stop in reverse.
// The ops listener starts first and stops last, so probes answer during boot and shutdown. The
// queue comes before the store: the store's schema cache keeps its schemas in the queue, so that
// a process booting while ClickHouse is down still validates.
func startOrder() []string {
	return []string{compOps, compMQ, compStore, compCache, compDedupe, compCoord, compSettings, compIngest, compSweeper, compAPI}
}

// roleNeeds says which components each role needs besides the ops listener.
func roleNeeds(r config.Role) []string {
	switch r {
	case config.RoleAPI:
		return []string{compStore, compMQ, compCache, compDedupe, compSettings, compAPI}
	case config.RoleIngest:
		return []string{compStore, compMQ, compCache, compSettings, compIngest}
	case config.RoleSweeper:
		return []string{compMQ, compCoord, compDedupe, compSweeper}
	}
	return nil
}

// componentsFor returns the components the roles need, in start order.
func componentsFor(roles config.Roles) []string {
	need := map[string]bool{compOps: true}
	for _, r := range roles {
		for _, c := range roleNeeds(r) {
			need[c] = true
		}
	}
	var out []string
	for _, c := range startOrder() {
		if need[c] {
			out = append(out, c)
		}
	}
	return out
}
