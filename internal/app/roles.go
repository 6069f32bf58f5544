package app

import "github.com/wavehouse/wavehouse/internal/config"

// The components a process can run (the role → component table is config's, read by Uses).
const (
	compOps      = config.ComponentOps
	compStore    = config.ComponentStore
	compMQ       = config.ComponentMQ
	compCache    = config.ComponentCache
	compDedupe   = config.ComponentDedupe
	compCoord    = config.ComponentCoord
	compSettings = config.ComponentSettings
	compIngest   = config.ComponentIngest
	compSweeper  = config.ComponentSweeper
	compAPI      = config.ComponentAPI
)

// startOrder is the one place that orders components: start in this order, stop in reverse.
// The ops listener starts first and stops last, so probes answer during boot and shutdown. The
// queue comes before the store: the store's schema cache keeps its schemas in the queue, so that
// a process booting while ClickHouse is down still validates. The API listener comes last, so no
// request arrives before everything it needs has started.
func startOrder() []string {
	return []string{compOps, compMQ, compStore, compCache, compDedupe, compCoord, compSettings, compIngest, compSweeper, compAPI}
}

// componentsFor returns the components the roles use, in start order.
func componentsFor(roles config.Roles) []string {
	var out []string
	for _, c := range startOrder() {
		if roles.Uses(c) {
			out = append(out, c)
		}
	}
	return out
}
