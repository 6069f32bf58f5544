package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the report as a side-by-side table followed by status codes and errors.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "bench ingest: clients=%d rows/request=%d format=%s gzip=%t wait_committed=%t duration=%s requests=%d rate=%g rows/s interfaces=%s rounds=%d\n\n",
		c.Clients, c.Rows, c.Format, c.Gzip, c.WaitCommitted, c.Duration, c.Requests, c.Rate, strings.Join(c.Interfaces, ","), c.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treq\tfailed\tok req/s\trows/s\tp50\tp95\tp99\tmax\tok\tqueryable\te2e rows/s\tfresh p50\tfresh p99\tfresh max\tinserts\tparts end/final\t")
	for _, p := range r.Phases {
		q, e2e, f50, f99, fmax := "?", "?", "?", "?", "?"
		if p.Queryable >= 0 {
			q = fmt.Sprintf("%d", p.Queryable)
		}
		if p.AllQueryable {
			e2e = fmt.Sprintf("%.0f", p.EndToEndRowsS)
		}
		if p.Freshness.Count > 0 {
			f50, f99, fmax = ms(p.Freshness.P50), ms(p.Freshness.P99), ms(p.Freshness.Max)
		}
		parts, inserts := orUnknown(p.PartsAtEnd)+"/"+orUnknown(p.Parts), orUnknown(p.Inserts)
		target := p.Target
		if r.Config.Rounds > 1 && p.Round > 0 {
			target = fmt.Sprintf("%s #%d", p.Target, p.Round)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			target, p.Requests, p.FailedRequests, p.RequestsPerS, p.RowsPerS,
			ms(p.Latency.P50), ms(p.Latency.P95), ms(p.Latency.P99), ms(p.Latency.Max),
			p.OKRequests, q, e2e, f50, f99, fmax, inserts, parts)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Phases {
		fmt.Fprintf(w, "\n%s (table %s): elapsed %s, accepted rows %d, status %s",
			p.Target, p.Table, p.Elapsed.Round(time.Millisecond), p.AcceptedRows, statusLine(p.Status))
		if p.AllQueryable {
			fmt.Fprintf(w, ", all queryable %s after start", p.EndToEnd.Round(time.Millisecond))
		}
		if p.GatewayCPUSeconds >= 0 && p.OKRequests > 0 && p.Elapsed > 0 {
			fmt.Fprintf(w, ", gateway CPU %.2f cores, %.0f µs a 2xx request",
				p.GatewayCPUSeconds/p.Elapsed.Seconds(), 1e6*p.GatewayCPUSeconds/float64(p.OKRequests))
		}
		fmt.Fprintln(w)
		if p.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", p.Note)
		}
		keys := make([]string, 0, len(p.Errors))
		for k := range p.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  error ×%d: %s\n", p.Errors[k], k)
		}
	}
	if len(r.Phases) > 1 && r.Phases[0].Target == "gateway" {
		g := r.Phases[0]
		fmt.Fprintln(w)
		for _, d := range r.Phases[1:] {
			line := fmt.Sprintf("gateway vs %s: accepted req/s %.2f×", d.Target, ratio(okRate(g), okRate(d)))
			if g.AllQueryable && d.AllQueryable {
				line += fmt.Sprintf(", end-to-end rows/s %.2f×", ratio(g.EndToEndRowsS, d.EndToEndRowsS))
			}
			if g.Inserts >= 0 && d.Inserts >= 0 {
				line += fmt.Sprintf(", inserts (parts created) %d vs %d", g.Inserts, d.Inserts)
			}
			if g.PartsAtEnd >= 0 && d.PartsAtEnd >= 0 {
				line += fmt.Sprintf(", active parts at load end %d vs %d", g.PartsAtEnd, d.PartsAtEnd)
			}
			fmt.Fprintln(w, line)
		}
	}
	if ing, chi := r.Rounds(PhaseGateway), r.Rounds(PhaseGatewayClickHouse); len(ing) > 0 && len(chi) > 0 {
		fmt.Fprintln(w)
		writeRounds(w, PhaseGateway, ing)
		writeRounds(w, PhaseGatewayClickHouse, chi)
		mi, mc := meanRowsPerS(ing), meanRowsPerS(chi)
		fmt.Fprintf(w, "clickhouse interface vs /v1/ingest: accepted rows/s %.2f× (mean %.0f vs %.0f over %d and %d rounds)",
			ratio(mc, mi), mc, mi, len(chi), len(ing))
		if ei, ec := meanEndToEnd(ing), meanEndToEnd(chi); ei > 0 && ec > 0 {
			fmt.Fprintf(w, ", end-to-end rows/s %.2f×", ratio(ec, ei))
		}
		fmt.Fprintln(w)
	}
	if r.GatewayRSSBytes >= 0 {
		fmt.Fprintf(w, "\ngateway RSS at the end: %.1f MB\n", float64(r.GatewayRSSBytes)/1e6)
	} else if c.OpsURL != "" {
		fmt.Fprintf(w, "\ngateway RSS at the end: unknown (no process_resident_memory_bytes at %s/metrics)\n", c.OpsURL)
	}
	if len(r.Failed) > 0 {
		fmt.Fprintln(w, "\nFAILED:")
		for _, f := range r.Failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
	} else {
		fmt.Fprintln(w, "\nall checks passed")
	}
	return nil
}

// Rounds returns the phases of one gateway target (PhaseGateway, …) in the order they ran.
func (r *Report) Rounds(target string) []Phase {
	var out []Phase
	for _, p := range r.Phases {
		if p.Target == target {
			out = append(out, p)
		}
	}
	return out
}

// writeRounds writes one line with each round's accepted rows/s of a target.
func writeRounds(w io.Writer, target string, ps []Phase) {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%.0f", p.RowsPerS)
	}
	fmt.Fprintf(w, "%s rows/s by round: %s\n", target, strings.Join(parts, ", "))
}

// meanRowsPerS is the mean accepted rows/s over phases.
func meanRowsPerS(ps []Phase) float64 {
	sum := 0.0
	for _, p := range ps {
		sum += p.RowsPerS
	}
	return sum / float64(len(ps))
}

// meanEndToEnd is the mean end-to-end rows/s over phases, 0 when any phase's rows were not all
// queryable.
func meanEndToEnd(ps []Phase) float64 {
	sum := 0.0
	for _, p := range ps {
		if !p.AllQueryable {
			return 0
		}
		sum += p.EndToEndRowsS
	}
	return sum / float64(len(ps))
}

func orUnknown(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%d", n)
}

// okRate is the rate of 2xx requests.
func okRate(p Phase) float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.OKRequests) / p.Elapsed.Seconds()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func statusLine(m map[int]int64) string {
	if len(m) == 0 {
		return "none"
	}
	codes := make([]int, 0, len(m))
	for k := range m {
		codes = append(codes, k)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, k := range codes {
		parts[i] = fmt.Sprintf("%d×%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
