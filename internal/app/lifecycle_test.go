package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// recorder is a test component that records its lifecycle calls in a shared journal.
type recorder struct {
	name     string
	journal  *journal
	startErr error
	runErr   chan error // Run returns what arrives here, or nil when stopped
	stopped  chan struct{}
}

type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) { j.mu.Lock(); j.events = append(j.events, e); j.mu.Unlock() }
func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

func newRecorder(name string, j *journal) *recorder {
	return &recorder{name: name, journal: j, runErr: make(chan error, 1), stopped: make(chan struct{})}
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Start(context.Context) error {
	r.journal.add("start " + r.name)
	return r.startErr
}
func (r *recorder) Run(ctx context.Context) error {
	select {
	case err := <-r.runErr:
		return err
	case <-r.stopped:
		return nil
	case <-ctx.Done():
		return nil
	}
}
func (r *recorder) Stop(context.Context) error {
	r.journal.add("stop " + r.name)
	close(r.stopped)
	return nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestLifecycleStopsInReverseStartOrder(t *testing.T) {
	j := &journal{}
	a, b, c := newRecorder("a", j), newRecorder("b", j), newRecorder("c", j)
	var started, stopping bool
	lc := lifecycle{log: quietLog(), components: []Component{a, b, c}, stopTimeout: 5 * time.Second,
		onStarted: func() { started = true; j.add("ready") }, onStopping: func() { stopping = true; j.add("draining") }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- lc.run(ctx) }()
	poll.Until(t, 10*time.Second, "the ready event", func() bool { return slices.Contains(j.list(), "ready") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("clean shutdown returned %v", err)
	}
	want := []string{"start a", "start b", "start c", "ready", "draining", "stop c", "stop b", "stop a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if !started || !stopping {
		t.Fatal("hooks not called")
	}
}

func TestLifecycleFailingComponentStopsProcess(t *testing.T) {
	j := &journal{}
	a, b, c := newRecorder("a", j), newRecorder("b", j), newRecorder("c", j)
	lc := lifecycle{log: quietLog(), components: []Component{a, b, c}, stopTimeout: 5 * time.Second,
		onStarted: func() { j.add("ready") }}
	done := make(chan error, 1)
	go func() { done <- lc.run(t.Context()) }()
	poll.Until(t, 10*time.Second, "the ready event", func() bool { return slices.Contains(j.list(), "ready") })
	boom := errors.New("boom")
	b.runErr <- boom
	err := <-done
	var fe *FatalError
	if !errors.As(err, &fe) || fe.Component != "b" || !errors.Is(err, boom) {
		t.Fatalf("got %v, want a FatalError from b wrapping boom", err)
	}
	want := []string{"start a", "start b", "start c", "ready", "stop c", "stop b", "stop a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestLifecycleStartFailureStopsOnlyStarted(t *testing.T) {
	j := &journal{}
	a, b, c := newRecorder("a", j), newRecorder("b", j), newRecorder("c", j)
	b.startErr = errors.New("port taken")
	lc := lifecycle{log: quietLog(), components: []Component{a, b, c}, stopTimeout: 5 * time.Second}
	err := lc.run(t.Context())
	var fe *FatalError
	if !errors.As(err, &fe) || fe.Component != "b" {
		t.Fatalf("got %v, want a FatalError from b", err)
	}
	want := []string{"start a", "start b", "stop a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
