package knob

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

func TestIntDefaultValueAndRefusal(t *testing.T) {
	const name = "WH_TEST_KNOB_UNDER_TEST"
	if got := Int(t, name, 7, 1); got != 7 {
		t.Fatalf("unset: %d, want the default 7", got)
	}
	t.Setenv(name, "12")
	if got := Int(t, name, 7, 1); got != 12 {
		t.Fatalf("set: %d, want 12", got)
	}
	for _, bad := range []string{"0", "x", "1.5"} {
		t.Setenv(name, bad)
		if msg := tbtest.FatalOf(t, func(tb testing.TB) { Int(tb, name, 7, 1) }); msg == "" {
			t.Errorf("%s=%q was accepted", name, bad)
		}
	}
}
