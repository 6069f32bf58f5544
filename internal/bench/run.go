package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// sampleEvery is the period of the accepted-rows and queryable-rows timelines; it is also the
// resolution of the freshness figures.
const sampleEvery = 100 * time.Millisecond

// Names of the gateway's phases (Phase.Target); direct phases are "direct <kind>".
const (
	PhaseGateway           = "gateway"
	PhaseGatewayKeyed      = "gateway keyed"
	PhaseGatewayClickHouse = "gateway clickhouse"
)

// Phase is the result of one target's load phase.
type Phase struct {
	Target string `json:"target"`
	// Round is the gateway phase's round (1..Config.Rounds); 0 for direct phases.
	Round      int           `json:"round,omitempty"`
	Table      string        `json:"table"`
	Elapsed    time.Duration `json:"elapsed"`
	Requests   int64         `json:"requests"`
	OKRequests int64         `json:"ok_requests"`
	// FailedRequests are the requests that got a transport error (a refused connection, a
	// timeout) or a non-2xx answer; they count against the run (Report.Failed).
	FailedRequests int64   `json:"failed_requests"`
	AcceptedRows   int64   `json:"accepted_rows"`
	RequestsPerS   float64 `json:"requests_per_s"` // 2xx requests per second
	// Latency is from the send to the answer; with Rate it is from the time the request was
	// scheduled, so a server that falls behind shows its queueing delay (no coordinated omission).
	RowsPerS      float64          `json:"rows_per_s"`
	Latency       Latency          `json:"latency"`
	Status        map[int]int64    `json:"status"`
	Errors        map[string]int64 `json:"errors,omitempty"`
	Queryable     int64            `json:"queryable_rows"` // rows counted after the run (minus the count before it); -1 unknown
	AllQueryable  bool             `json:"all_queryable"`  // Queryable reached AcceptedRows within Settle
	EndToEnd      time.Duration    `json:"end_to_end"`     // from the start until all accepted rows were queryable
	EndToEndRowsS float64          `json:"end_to_end_rows_per_s"`
	Freshness     Latency          `json:"freshness"`         // accept → queryable over the sampled marks
	Parts         int64            `json:"parts"`             // active parts of the table after the run; -1 unknown
	PartsAtEnd    int64            `json:"parts_at_load_end"` // active parts when the load stopped, before merges catch up; -1 unknown
	Inserts       int64            `json:"inserts"`           // INSERT queries the server ran during the phase (= parts created); -1 unknown
	// GatewayCPUSeconds is the CPU time the gateway process used from the phase's start to the
	// end of its load (process_cpu_seconds_total on Config.OpsURL); -1 unknown or not a
	// gateway phase. Per request it is a steadier measure of the gateway's cost than req/s on a
	// box whose other tenants come and go.
	GatewayCPUSeconds float64 `json:"gateway_cpu_seconds"`
	Note              string  `json:"note,omitempty"`
}

// Report is the result of a whole run: the gateway phase first, then each direct target.
type Report struct {
	Config Config  `json:"config"`
	Phases []Phase `json:"phases"`
	// GatewayRSSBytes is the gateway's resident memory at the end of the run, read from
	// process_resident_memory_bytes on Config.OpsURL; -1 unknown.
	GatewayRSSBytes int64 `json:"gateway_rss_bytes"`
	// Failed lists the run's own checks that did not hold; a run with any fails (exit status 1).
	Failed []string `json:"failed_checks,omitempty"`
}

// Run runs the load phases the configuration names, one after the other, and returns their
// results. A phase that cannot start (table creation, connection) fails the run; request errors
// during a phase are counted, not returned.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := newHTTPClient(cfg.Clients + 2)
	defer client.CloseIdleConnections()
	var ch *clickHouseHTTP
	if cfg.ClickHouseHTTP != "" {
		ch = &clickHouseHTTP{client: client, addr: cfg.ClickHouseHTTP}
	}
	rep := &Report{Config: cfg, GatewayRSSBytes: -1}
	defer func() { rep.Failed = rep.checks() }()
	now := time.Now()
	if cfg.URL != "" {
		if cfg.Create {
			if err := createViaGateway(ctx, client, cfg.URL, cfg.OperatorKey, CreateTableSQL(cfg.Table)); err != nil {
				return nil, fmt.Errorf("create %s: %w", cfg.Table, err)
			}
		}
		batches, err := genBatches(cfg.Bodies, cfg.Rows, cfg.Format, cfg.Gzip, now)
		if err != nil {
			return nil, err
		}
		var cnt counter = gatewayCounter{client: client, url: cfg.URL, table: cfg.Table}
		if ch != nil {
			cnt = tableCounter{ch: ch, table: cfg.Database + "." + cfg.Table}
		}
		for round := 1; round <= cfg.Rounds; round++ {
			phases, err := gatewayPhases(cfg)
			if err != nil {
				return nil, err
			}
			if round%2 == 0 {
				// ABBA order: every interface runs as often first as second, so whatever one
				// phase leaves the next (the store's merges, a warm table) falls on both.
				slices.Reverse(phases)
			}
			for _, gp := range phases {
				p := runPhase(ctx, cfg, gp.name, cfg.Table, gp.target, batches, cnt, ch, gatewayCPU(client, cfg.OpsURL))
				p.Round = round
				p.Parts = partsOf(ctx, ch, cfg.Database, cfg.Table)
				rep.Phases = append(rep.Phases, p)
			}
		}
		if cfg.OpsURL != "" {
			rep.GatewayRSSBytes = gatewayRSS(ctx, client, cfg.OpsURL)
		}
	}
	for _, d := range cfg.Direct {
		p, err := runDirect(ctx, cfg, client, d, now)
		if err != nil {
			return rep, err
		}
		rep.Phases = append(rep.Phases, p)
	}
	return rep, nil
}

// gatewayPhase is one load phase against the gateway.
type gatewayPhase struct {
	name   string
	target target
}

// gatewayPhases returns one round of the gateway's phases: each interface in order, the ingest
// interface followed by its keyed run when IdempotencyKeys is set.
func gatewayPhases(cfg Config) ([]gatewayPhase, error) {
	var out []gatewayPhase
	for _, iface := range cfg.Interfaces {
		switch iface {
		case InterfaceClickHouse:
			tg, err := gatewayClickHouseTarget(cfg)
			if err != nil {
				return nil, err
			}
			out = append(out, gatewayPhase{PhaseGatewayClickHouse, tg})
		default:
			tg, err := gatewayTarget(cfg, false)
			if err != nil {
				return nil, err
			}
			out = append(out, gatewayPhase{PhaseGateway, tg})
			if cfg.IdempotencyKeys {
				tg, err := gatewayTarget(cfg, true)
				if err != nil {
					return nil, err
				}
				out = append(out, gatewayPhase{PhaseGatewayKeyed, tg})
			}
		}
	}
	return out, nil
}

func partsOf(ctx context.Context, ch *clickHouseHTTP, database, table string) int64 {
	if ch == nil {
		return -1
	}
	n, err := ch.parts(ctx, database, table)
	if err != nil {
		return -1
	}
	return n
}

func runDirect(ctx context.Context, cfg Config, client *http.Client, d Direct, now time.Time) (Phase, error) {
	batches, err := genBatches(cfg.Bodies, cfg.Rows, FormatNDJSON, cfg.Gzip && d.Kind == DirectHTTP, now)
	if err != nil {
		return Phase{}, err
	}
	switch d.Kind {
	case DirectHTTP:
		table := cfg.Table + "_direct_http"
		ch := &clickHouseHTTP{client: client, addr: d.Addr}
		if cfg.Create {
			if _, err := ch.query(ctx, CreateTableSQL(cfg.Database+"."+table)); err != nil {
				return Phase{}, fmt.Errorf("create %s: %w", table, err)
			}
		}
		s := clickHouseHTTPTarget(d.Addr, cfg.Database, table, cfg.Gzip)
		p := runPhase(ctx, cfg, "direct "+d.Kind, table, s, batches, tableCounter{ch: ch, table: cfg.Database + "." + table}, ch, nil)
		p.Parts = partsOf(ctx, ch, cfg.Database, table)
		return p, nil
	default:
		table := cfg.Table + "_direct_native"
		conn, err := openNative(ctx, d.Addr, cfg.Database, cfg.Clients)
		if err != nil {
			return Phase{}, err
		}
		defer conn.Close()
		if cfg.Create {
			if err := conn.Exec(ctx, CreateTableSQL(cfg.Database+"."+table)); err != nil {
				return Phase{}, fmt.Errorf("create %s: %w", table, err)
			}
		}
		s := &nativeSender{conn: conn, sql: "INSERT INTO " + cfg.Database + "." + table + " (ts, id, user, kind, value, tags, note)"}
		var ch *clickHouseHTTP
		if cfg.ClickHouseHTTP != "" {
			ch = &clickHouseHTTP{client: client, addr: cfg.ClickHouseHTTP}
		}
		var cnt counter = nativeCounter{conn: conn, table: cfg.Database + "." + table}
		p := runPhase(ctx, cfg, "direct "+d.Kind, table, s, batches, cnt, ch, nil)
		if ch == nil {
			if n, err := nativeParts(ctx, conn, cfg.Database, table); err == nil {
				p.Parts = n
			}
		} else {
			p.Parts = partsOf(ctx, ch, cfg.Database, table)
		}
		return p, nil
	}
}

// clientResult is what one client goroutine measured.
type clientResult struct {
	lat    []time.Duration
	status map[int]int64
	errs   map[string]int64
}

// runPhase drives the clients against one sender, samples the timelines and waits for the
// accepted rows to become queryable.
func runPhase(ctx context.Context, cfg Config, name, table string, tg target, batches []Batch, cnt counter, ch *clickHouseHTTP, cpu func(context.Context) float64) (p Phase) {
	p = Phase{Target: name, Table: table, Queryable: -1, Parts: -1, PartsAtEnd: -1, Inserts: -1, GatewayCPUSeconds: -1}
	cpu0 := -1.0
	if cpu != nil {
		cpu0 = cpu(ctx)
	}
	base, baseErr := cnt.count(ctx)
	inserts0, insertsErr := insertQueries(ctx, ch)
	defer func() {
		if n, err := insertQueries(ctx, ch); err == nil && insertsErr == nil {
			p.Inserts = n - inserts0
		}
	}()

	var next, accepted, okReq, failedReq atomic.Int64
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	loadCtx, cancelLoad := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancelLoad()

	var interval time.Duration // per-client pacing when rate-limited
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Clients*cfg.Rows) / cfg.Rate)
	}
	results := make([]clientResult, cfg.Clients)
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := clientResult{status: map[int]int64{}, errs: map[string]int64{}}
			s := tg.newConn()
			defer s.close()
			due := start.Add(interval * time.Duration(i) / time.Duration(cfg.Clients))
			var timer *time.Timer
			for {
				if interval > 0 {
					if wait := time.Until(due); wait > 0 {
						if timer == nil {
							timer = time.NewTimer(wait)
						} else {
							timer.Reset(wait)
						}
						select {
						case <-loadCtx.Done():
						case <-timer.C:
						}
					}
					due = due.Add(interval)
				}
				k := next.Add(1) - 1
				if (cfg.Requests > 0 && k >= int64(cfg.Requests)) || !time.Now().Before(deadline) || loadCtx.Err() != nil {
					break
				}
				b := &batches[int(k)%len(batches)]
				t0 := time.Now()
				if interval > 0 {
					t0 = due.Add(-interval) // when this request was due, not when it went out
				}
				status, detail, err := s.send(loadCtx, b)
				res.lat = append(res.lat, time.Since(t0))
				switch {
				case err != nil:
					failedReq.Add(1)
					res.errs[shorten(err.Error())]++
				case status >= 200 && status < 300:
					okReq.Add(1)
					res.status[status]++
					accepted.Add(int64(len(b.Rows)))
				default:
					failedReq.Add(1)
					res.status[status]++
					res.errs[fmt.Sprintf("%d %s", status, shorten(maskDigits(detail)))]++
				}
			}
			if timer != nil {
				timer.Stop()
			}
			results[i] = res
		}()
	}

	// The accepted timeline: a mark each time the accepted count grew since the last sample.
	// The queryable timeline: the table's count, polled at the same period.
	var marks, seen []Mark
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	var last int64
	ticks := 0
	progress := func() {
		ticks++
		if cfg.Progress == nil || ticks%int(time.Second/sampleEvery) != 0 {
			return
		}
		secs := time.Since(start).Seconds()
		fmt.Fprintf(cfg.Progress, "%s %4.0fs  ok %d  failed %d  accepted rows %d  %.0f rows/s\n",
			name, secs, okReq.Load(), failedReq.Load(), accepted.Load(), float64(accepted.Load())/secs)
	}
	poll := func() {
		if baseErr != nil {
			return
		}
		if n, err := cnt.count(ctx); err == nil {
			seen = append(seen, Mark{At: time.Now(), Rows: n - base})
		}
	}
loop:
	for {
		select {
		case <-loadDone:
			break loop
		case <-tick.C:
			if a := accepted.Load(); a > last {
				marks = append(marks, Mark{At: time.Now(), Rows: a})
				last = a
			}
			poll()
			progress()
		}
	}
	end := time.Now()
	if cpu0 >= 0 {
		if cpu1 := cpu(ctx); cpu1 >= cpu0 {
			p.GatewayCPUSeconds = cpu1 - cpu0
		}
	}
	p.PartsAtEnd = partsOf(ctx, ch, cfg.Database, table)
	total := accepted.Load()
	if total > last {
		marks = append(marks, Mark{At: end, Rows: total})
	}

	p.Elapsed = end.Sub(start)
	var all []time.Duration
	p.Status = map[int]int64{}
	p.Errors = map[string]int64{}
	for _, r := range results {
		all = append(all, r.lat...)
		for k, v := range r.status {
			p.Status[k] += v
			if k >= 200 && k < 300 {
				p.OKRequests += v
			}
		}
		for k, v := range r.errs {
			p.Errors[k] += v
		}
	}
	p.Requests = int64(len(all))
	p.FailedRequests = p.Requests - p.OKRequests
	p.AcceptedRows = total
	p.Latency = Summarize(all)
	if secs := p.Elapsed.Seconds(); secs > 0 {
		p.RequestsPerS = float64(p.OKRequests) / secs
		p.RowsPerS = float64(total) / secs
	}

	if baseErr != nil {
		p.Note = "rows not counted: " + shorten(baseErr.Error())
		return p
	}
	// Settle: keep polling until every accepted row is queryable or the bound passes.
	settle := time.NewTimer(cfg.Settle)
	defer settle.Stop()
	poll()
	for len(seen) == 0 || seen[len(seen)-1].Rows < total {
		select {
		case <-ctx.Done():
		case <-settle.C:
		case <-tick.C:
			poll()
			continue
		}
		break
	}
	if len(seen) > 0 {
		lastSeen := seen[len(seen)-1]
		p.Queryable = lastSeen.Rows
		p.AllQueryable = lastSeen.Rows >= total
		if p.AllQueryable {
			// The first sample at or above the total is when the last row became queryable.
			i := sort.Search(len(seen), func(i int) bool { return seen[i].Rows >= total })
			p.EndToEnd = seen[i].At.Sub(start)
			if secs := p.EndToEnd.Seconds(); secs > 0 {
				p.EndToEndRowsS = float64(total) / secs
			}
		}
	}
	delays, unreached := Freshness(marks, seen)
	p.Freshness = Summarize(delays)
	if unreached > 0 {
		p.Note = fmt.Sprintf("%d of %d accepted marks never became queryable within %s", unreached, len(marks), cfg.Settle)
	}
	return p
}

// maskDigits replaces each run of digits with N, so that error messages differing only in numbers
// ("Too many parts (301)", "(302)") are counted together.
func maskDigits(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if i == 0 || s[i-1] < '0' || s[i-1] > '9' {
				b = append(b, 'N')
			}
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func shorten(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
