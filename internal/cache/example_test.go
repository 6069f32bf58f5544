package cache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/localcache"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
)

// Example shows the lookup the query path performs: versions are read before the query
// runs and the fill is filed under them, so an insert during the query orphans it.
func Example() {
	ctx := context.Background()
	c, _ := localcache.New(localcache.Config{}, localcache.Deps{})
	defer c.Close(ctx)

	const tenant, sql = "acme", "SELECT count() FROM events -- dashboard"
	tables, sure := sqlscan.Tables(sql)
	deps := cache.Deps{AllTables: !sure}
	for _, t := range tables {
		deps.Tables = append(deps.Tables, t.Name)
	}
	lookup := func(runQuery func() []byte) string {
		v, err := c.Versions(ctx, tenant, deps)
		if err != nil { // cache.Bypass(err): answer without the cache
			return "BYPASS " + string(runQuery())
		}
		key := cache.NewKey(tenant, sqlscan.Normalize(sql), nil, v)
		if res, err := c.Get(ctx, key); err == nil {
			return "HIT " + string(res)
		} else if !errors.Is(err, cache.ErrMiss) {
			return "BYPASS " + string(runQuery())
		}
		res := runQuery()
		_ = c.Set(ctx, key, res, time.Minute) // ErrTooLarge or an outage only cost the fill
		return "MISS " + string(res)
	}

	fmt.Println(lookup(func() []byte { return []byte("1") }))
	fmt.Println(lookup(func() []byte { return []byte("unused") }))
	// An insert lands while the next query runs: its fill is orphaned.
	_ = c.BumpTable(ctx, tenant, "events")
	fmt.Println(lookup(func() []byte {
		_ = c.BumpTable(ctx, tenant, "events")
		return []byte("2")
	}))
	fmt.Println(lookup(func() []byte { return []byte("3") }))
	fmt.Println(lookup(func() []byte { return []byte("unused") }))
	// Output:
	// MISS 1
	// HIT 1
	// MISS 2
	// MISS 3
	// HIT 3
}
