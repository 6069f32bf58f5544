package request

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that pooled decompressors never leave goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
