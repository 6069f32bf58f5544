package breaker

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics exports every breaker built with it: wavehouse_breaker_state{component,target}
// (0 closed, 1 half-open, 2 open, read at scrape time) and
// wavehouse_breaker_transitions_total{component,target,to}. It is safe for concurrent use.
type Metrics struct {
	state       *prometheus.Desc
	transitions *prometheus.CounterVec

	mu       sync.Mutex
	breakers map[[2]string]*Breaker
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics creates the instruments and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		state: prometheus.NewDesc("wavehouse_breaker_state",
			"Circuit breaker state per protected target: 0 closed, 1 half-open (the next call is the trial), 2 open.",
			[]string{"component", "target"}, nil),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wavehouse_breaker_transitions_total",
			Help: "Circuit breaker state changes, by the state entered.",
		}, []string{"component", "target", "to"}),
		breakers: map[[2]string]*Breaker{},
	}
	if reg == nil {
		return m, nil
	}
	return m, errors.Join(reg.Register(m), reg.Register(m.transitions))
}

// Describe implements prometheus.Collector for the state gauge.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.state }

// Collect implements prometheus.Collector for the state gauge.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	bs := make(map[[2]string]*Breaker, len(m.breakers))
	for k, b := range m.breakers {
		bs[k] = b
	}
	m.mu.Unlock()
	for k, b := range bs {
		g, err := prometheus.NewConstMetric(m.state, prometheus.GaugeValue, float64(b.State()), k[0], k[1])
		if err != nil {
			g = prometheus.NewInvalidMetric(m.state, err)
		}
		ch <- g
	}
}

// track exports b. A later breaker with the same labels replaces the earlier one.
func (m *Metrics) track(b *Breaker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.breakers[b.labels] = b
}

func (m *Metrics) transition(b *Breaker, to State) {
	m.transitions.WithLabelValues(b.labels[0], b.labels[1], to.String()).Inc()
}
