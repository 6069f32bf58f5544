// Package tbtest tests test helpers: it runs a helper against a testing.TB that records the
// helper's failure instead of failing the calling test.
package tbtest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// fatalTB records the message of the first Fatalf/Fatal and stops its goroutine.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// FatalOf runs fn on its own goroutine with a TB wrapping t and returns the message fn failed
// with ("" if it did not fail).
func FatalOf(t testing.TB, fn func(testing.TB)) string {
	f := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { fn(f) })
	wg.Wait()
	return f.msg
}
