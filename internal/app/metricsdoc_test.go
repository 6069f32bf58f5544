package app

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/ops"
	"github.com/wavehouse/wavehouse/internal/testutil/golden"
)

var update = flag.Bool("update", false, "rewrite the generated reference in docs/metrics.md")

const (
	metricsDocPath   = "../../docs/metrics.md"
	beginMetricsList = "<!-- BEGIN GENERATED: go test ./internal/app -run TestMetricsReference -update -->\n"
	endMetricsList   = "<!-- END GENERATED -->"
)

// restTypes are the types of scrape-time families whose collector emits nothing in an idle
// process and is no vector either, so neither a gather nor the collector's Go type tells them.
// The test fails for an entry that stops being needed.
var restTypes = map[string]string{
	"wavehouse_mq_tenant_queued_bytes": "gauge",
	"wavehouse_mq_tenant_budget_bytes": "gauge",
}

// recordingRegistry is the process registry, remembering every collector registered with it: a
// vector without children and a scrape-time collector with nothing to report are in no gather,
// but their descriptions are.
type recordingRegistry struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recordingRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

// family is one line of the metrics reference. Type is "" while unknown.
type family struct {
	name, typ, help string
	labels          []string
}

// descPattern reads prometheus.Desc.String(), the only public view of a description's labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

var constLabelName = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)=`)

// describe returns the wavehouse families c describes.
func describe(t *testing.T, c prometheus.Collector) []family {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var out []family
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		name, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatal(err)
		}
		help, err := strconv.Unquote(m[2])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "wavehouse_") {
			continue
		}
		f := family{name: name, help: help, typ: vectorType(c)}
		for _, cl := range constLabelName.FindAllStringSubmatch(m[3], -1) {
			f.labels = append(f.labels, cl[1])
		}
		for _, vl := range strings.Split(m[4], ",") {
			if vl = strings.TrimSuffix(strings.TrimPrefix(vl, "c("), ")"); vl != "" {
				f.labels = append(f.labels, vl)
			}
		}
		out = append(out, f)
	}
	return out
}

// vectorType tells a vector's type from its Go type; "" for anything else.
func vectorType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	return ""
}

// processFamilies starts a process of cfg on a recording registry and returns every wavehouse
// family it registered, typed from a gather where the collector's Go type does not tell.
func processFamilies(t *testing.T, cfg configOf) map[string]family {
	t.Helper()
	reg := &recordingRegistry{Registry: ops.NewRegistry()}
	a, err := New(cfg(t), quietLog(), withRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	runBuilt(t, a)
	gathered := map[string]string{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		gathered[mf.GetName()] = strings.ToLower(dto.MetricType_name[int32(mf.GetType())])
	}
	out := map[string]family{}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, c := range reg.collectors {
		for _, f := range describe(t, c) {
			if f.typ == "" {
				f.typ = gathered[f.name]
			}
			out[f.name] = mergeFamily(t, out[f.name], f)
		}
	}
	return out
}

// configOf returns the config of one process of the reference.
type configOf func(*testing.T) config.Config

// mergeFamily joins two sightings of one family: help and type must agree, labels are the union.
func mergeFamily(t *testing.T, a, b family) family {
	t.Helper()
	if a.name == "" {
		return b
	}
	if a.help != b.help {
		t.Errorf("%s is registered with two help texts: %q and %q", a.name, a.help, b.help)
	}
	switch {
	case a.typ == "":
		a.typ = b.typ
	case b.typ != "" && a.typ != b.typ:
		t.Errorf("%s is registered as a %s and as a %s", a.name, a.typ, b.typ)
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			a.labels = append(a.labels, l)
		}
	}
	return a
}

// TestMetricsReference keeps docs/metrics.md equal to what the processes register: a process
// with every role on the embedded backends, and one with every role on the external ones (a
// ClickHouse server, NATS for the queue and leases, Redis, DynamoDB), so that a family only one
// backend registers is listed too.
func TestMetricsReference(t *testing.T) {
	servers := &sharedServers{t: t}
	all := map[string]family{}
	for _, cfg := range []configOf{
		func(t *testing.T) config.Config { return testConfig(t) },
		func(t *testing.T) config.Config {
			c := testConfig(t)
			for _, layer := range []string{"store", "cache", "dedupe", "coord"} { // coord brings mq
				servers.use(t, &c, layer)
			}
			return c
		},
	} {
		for name, f := range processFamilies(t, cfg) {
			all[name] = mergeFamily(t, all[name], f)
		}
	}
	used := map[string]bool{}
	for name, f := range all {
		if f.typ == "" {
			if f.typ = restTypes[name]; f.typ == "" {
				t.Errorf("%s: type unknown (no sample in an idle process, not a vector); add it to restTypes", name)
			}
			used[name] = true
			all[name] = f
		}
		if f.help == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	for name := range restTypes {
		if !used[name] {
			t.Errorf("restTypes lists %s, whose type the processes tell: remove it", name)
		}
	}
	golden.Section(t, metricsDocPath, beginMetricsList, endMetricsList, metricsMarkdown(all), "run make docs", *update)
}

// metricsMarkdown renders the families as one table per subsystem (the name's second word).
func metricsMarkdown(fams map[string]family) string {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	subsystem := ""
	for _, n := range names {
		f := fams[n]
		if s := strings.SplitN(n, "_", 3)[1]; s != subsystem {
			subsystem = s
			fmt.Fprintf(&b, "\n### %s\n\n| metric | type | labels | help |\n|---|---|---|---|\n", s)
		}
		labels := make([]string, len(f.labels))
		for i, l := range f.labels {
			labels[i] = "`" + l + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.name, f.typ, strings.Join(labels, ", "), strings.ReplaceAll(f.help, "|", `\|`))
	}
	b.WriteString("\n")
	return b.String()
}
