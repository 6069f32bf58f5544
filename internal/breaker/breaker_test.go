package breaker_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
)

// clock is a manually advanced clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newBreaker(t *testing.T, failures int, deps breaker.Deps) (*breaker.Breaker, *clock) {
	t.Helper()
	c := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	deps.Now = c.Now
	b, err := breaker.New(breaker.Config{Failures: failures, Cooldown: time.Second}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// call runs one call reporting outcome and returns whether it was admitted.
func call(t *testing.T, b *breaker.Breaker, outcome breaker.Outcome) bool {
	t.Helper()
	ran := false
	err := b.Do(func() (breaker.Outcome, error) { ran = true; return outcome, nil })
	if ran != (err == nil) {
		t.Fatalf("Do ran fn = %v but returned %v", ran, err)
	}
	if err != nil && !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("refused call returned %v, want breaker.ErrOpen", err)
	}
	return ran
}

func wantState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	if got := b.State(); got != want {
		t.Fatalf("state = %s, want %s", got, want)
	}
}

func TestOpensAfterConsecutiveFailuresAndRefusesForTheCooldown(t *testing.T) {
	b, clk := newBreaker(t, 3, breaker.Deps{})
	call(t, b, breaker.Failure)
	call(t, b, breaker.Failure)
	call(t, b, breaker.Success) // resets the count
	call(t, b, breaker.Failure)
	call(t, b, breaker.Neutral) // counts for nothing, does not reset either
	call(t, b, breaker.Failure)
	wantState(t, b, breaker.Closed)
	call(t, b, breaker.Failure)
	wantState(t, b, breaker.Open)
	if b.Opens() != 1 {
		t.Fatalf("opens = %d, want 1", b.Opens())
	}
	clk.Advance(300 * time.Millisecond)
	err := b.Do(func() (breaker.Outcome, error) { t.Fatal("open breaker ran a call"); return breaker.Neutral, nil })
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || oe.RetryIn != 700*time.Millisecond {
		t.Fatalf("refusal = %v, want an OpenError with 700ms to wait", err)
	}
	if ok, wait := b.Ready(); ok || wait != 700*time.Millisecond {
		t.Fatalf("Ready while open = %v, %v; want false, 700ms", ok, wait)
	}
	clk.Advance(700 * time.Millisecond)
	wantState(t, b, breaker.HalfOpen)
	if ok, _ := b.Ready(); !ok {
		t.Fatal("Ready after the cool-down = false")
	}
}

func TestHalfOpenAdmitsOneTrial(t *testing.T) {
	b, clk := newBreaker(t, 1, breaker.Deps{})
	call(t, b, breaker.Failure)
	clk.Advance(time.Second)
	inTrial := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- b.Do(func() (breaker.Outcome, error) { close(inTrial); <-release; return breaker.Failure, nil })
	}()
	<-inTrial
	if call(t, b, breaker.Success) {
		t.Fatal("a second call was admitted while the trial is out")
	}
	if ok, wait := b.Ready(); ok || wait != time.Second {
		t.Fatalf("Ready while the trial is out = %v, %v; want false, the cool-down", ok, wait)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantState(t, b, breaker.Open) // the failed trial reopened it
	if b.Opens() != 1 {
		t.Fatalf("opens = %d after a failed trial, want 1 (one outage)", b.Opens())
	}
	if call(t, b, breaker.Success) {
		t.Fatal("reopened breaker admitted a call before a new cool-down")
	}
	clk.Advance(time.Second)
	if !call(t, b, breaker.Success) {
		t.Fatal("no trial after the second cool-down")
	}
	wantState(t, b, breaker.Closed)
}

// TestNeutralTrialFreesTheSlot is the fault the package exists for: a trial that returns
// without reaching the dependency must not hold the breaker half-open with nothing admitted.
func TestNeutralTrialFreesTheSlot(t *testing.T) {
	b, clk := newBreaker(t, 1, breaker.Deps{})
	call(t, b, breaker.Failure)
	clk.Advance(time.Second)
	if !call(t, b, breaker.Neutral) {
		t.Fatal("no trial after the cool-down")
	}
	wantState(t, b, breaker.HalfOpen)
	if !call(t, b, breaker.Neutral) {
		t.Fatal("a neutral trial did not free the trial slot")
	}
	if !call(t, b, breaker.Success) {
		t.Fatal("no trial after two neutral ones")
	}
	wantState(t, b, breaker.Closed)
}

func TestPanickingOrExitingTrialIsNeutral(t *testing.T) {
	b, clk := newBreaker(t, 1, breaker.Deps{})
	call(t, b, breaker.Failure)
	clk.Advance(time.Second)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the trial's panic to continue", r)
			}
		}()
		_ = b.Do(func() (breaker.Outcome, error) { panic("boom") })
	}()
	wantState(t, b, breaker.HalfOpen)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = b.Do(func() (breaker.Outcome, error) { runtime.Goexit(); return breaker.Failure, nil })
	}()
	<-exited
	wantState(t, b, breaker.HalfOpen)
	if !call(t, b, breaker.Success) {
		t.Fatal("a trial that panicked or exited still holds the trial slot")
	}
	wantState(t, b, breaker.Closed)
}

// TestLateOutcomesAreIgnored: a call admitted before a state change reports into a breaker
// that has moved on; it must neither close an open breaker nor count against a closed one.
func TestLateOutcomesAreIgnored(t *testing.T) {
	b, clk := newBreaker(t, 2, breaker.Deps{})
	start := make(chan struct{})
	release := make(chan breaker.Outcome)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Do(func() (breaker.Outcome, error) { close(start); return <-release, nil })
	}()
	<-start
	call(t, b, breaker.Failure)
	call(t, b, breaker.Failure)
	wantState(t, b, breaker.Open)
	release <- breaker.Success // admitted while closed, finishing while open
	<-done
	wantState(t, b, breaker.Open)
	clk.Advance(time.Second)
	call(t, b, breaker.Success)
	wantState(t, b, breaker.Closed)

	start, done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Do(func() (breaker.Outcome, error) { close(start); return <-release, nil })
	}()
	<-start
	call(t, b, breaker.Failure)
	call(t, b, breaker.Failure)
	clk.Advance(time.Second)
	call(t, b, breaker.Success) // closed again: a new generation
	release <- breaker.Failure  // from the generation before the outage
	<-done
	call(t, b, breaker.Failure)
	wantState(t, b, breaker.Closed) // one failure of this generation, not two
}

func TestDoReturnsTheCallsError(t *testing.T) {
	b, _ := newBreaker(t, 1, breaker.Deps{})
	want := errors.New("request error")
	if err := b.Do(func() (breaker.Outcome, error) { return breaker.Success, want }); err != want {
		t.Fatalf("Do = %v, want the call's own error", err)
	}
	wantState(t, b, breaker.Closed)
}

func TestConfigIsValidated(t *testing.T) {
	for _, cfg := range []breaker.Config{{Failures: 0, Cooldown: time.Second}, {Failures: 1}} {
		if _, err := breaker.New(cfg, breaker.Deps{}); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
}

func TestMetricsAndOnChange(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := breaker.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	b, clk := newBreaker(t, 1, breaker.Deps{Metrics: m, Component: "writer", Target: "acme",
		OnChange: func(from, to breaker.State) { changes = append(changes, from.String()+">"+to.String()) }})
	wantState := func(want float64) {
		t.Helper()
		if got := metrictest.Value(t, reg, "wavehouse_breaker_state", map[string]string{"component": "writer", "target": "acme"}); got != want {
			t.Fatalf("wavehouse_breaker_state = %v, want %v", got, want)
		}
	}
	wantState(0)
	call(t, b, breaker.Failure)
	wantState(2)
	clk.Advance(time.Second)
	wantState(1)
	call(t, b, breaker.Success)
	wantState(0)
	if got := fmt.Sprint(changes); got != "[closed>open open>half_open half_open>closed]" {
		t.Fatalf("OnChange saw %s", got)
	}
	for _, to := range []string{"open", "half_open", "closed"} {
		labels := map[string]string{"component": "writer", "target": "acme", "to": to}
		if got := metrictest.Value(t, reg, "wavehouse_breaker_transitions_total", labels); got != 1 {
			t.Errorf("transitions to %s = %v, want 1", to, got)
		}
	}
}
