package testsvc

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test instead
// of ending the real one. Its Skipf and Fatalf stop the calling goroutine
// like the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runRecorded runs fn with a recorder in its own goroutine, so Goexit ends
// only fn, and returns the recorder.
func runRecorded(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

func TestMissingSkipsLocallyAndFailsInCI(t *testing.T) {
	for _, tc := range []struct {
		ci         string
		wantFailed bool
	}{
		{"", false},
		{"false", false},
		{"true", true},
		{"1", true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := runRecorded(t, func(tb testing.TB) { Missing(tb, "thing %s absent", "x") })
			if r.failed != tc.wantFailed || r.skipped == tc.wantFailed {
				t.Fatalf("failed=%v skipped=%v, want failed=%v", r.failed, r.skipped, tc.wantFailed)
			}
			if want := regexp.MustCompile(`thing x absent`); !want.MatchString(r.msg) {
				t.Fatalf("message %q does not carry the reason", r.msg)
			}
		})
	}
}

func TestUniqueNameIsValidPrefixedAndDistinct(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]+$`)
	seen := map[string]bool{}
	for _, tc := range []struct{ prefix, wantPrefix string }{
		{"wh", "wh_"},
		{"db_", "db_"},
		{"My-Test.Name", "my_test_name_"},
		{"", "t_"},
	} {
		for range 50 {
			n := UniqueName(t, tc.prefix)
			if !valid.MatchString(n) || len(n) > len(tc.wantPrefix)+10 || n[:len(tc.wantPrefix)] != tc.wantPrefix {
				t.Fatalf("UniqueName(%q) = %q, want %q + 10 hex digits", tc.prefix, n, tc.wantPrefix)
			}
			if seen[n] {
				t.Fatalf("UniqueName returned %q twice", n)
			}
			seen[n] = true
		}
	}
}

func TestCHDBLibHonoursEnvAndReportsMissing(t *testing.T) {
	t.Setenv("CI", "")
	lib := t.TempDir() + "/libchdb.so"
	t.Setenv("CHDB_LIB_PATH", lib)
	r := runRecorded(t, func(tb testing.TB) { CHDBLib(tb) })
	if !r.skipped {
		t.Fatalf("missing library: want skip, got failed=%v msg=%q", r.failed, r.msg)
	}
	writeFile(t, lib, "x")
	if got := CHDBLib(t); got != lib {
		t.Fatalf("CHDBLib = %q, want %q", got, lib)
	}
}

func TestCHDBLibFound(t *testing.T) {
	path := CHDBLib(t) // skips locally when the library has not been fetched
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("CHDBLib returned %q: %v", path, err)
	}
}

func TestSharedServerUnreachableFails(t *testing.T) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WH_TEST_REDIS_ADDR", hostPort(ports[0])) // nothing listens there now
	r := runRecorded(t, func(tb testing.TB) { RedisServer(tb) })
	if !r.failed {
		t.Fatalf("unreachable shared server: want failure, got skipped=%v", r.skipped)
	}
}

func TestHostOfURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                       "127.0.0.1:4222",
		"nats://u:p@127.0.0.1:4222,nats://other:4222": "127.0.0.1:4222",
		"http://127.0.0.1:8000/":                      "127.0.0.1:8000",
		"127.0.0.1:1":                                 "127.0.0.1:1",
	} {
		if got := hostOfURL(in); got != want {
			t.Errorf("hostOfURL(%q) = %q, want %q", in, got, want)
		}
	}
}
