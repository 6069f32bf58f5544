package writer

import (
	"math/rand/v2"
	"time"
)

// backoff is the redelivery delay of a frame's attempt-th failure (attempt ≥ 1).
func backoff(min, max time.Duration, attempt int) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min64(d, max)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

func min64(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
