package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

func ms2d(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	// 1..100 ms: the q-th percentile by nearest rank is exactly q ms.
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, q := range []float64{1, 50, 95, 99, 100} {
		if got, want := Percentile(s, q), time.Duration(q)*time.Millisecond; got != want {
			t.Errorf("P%g of 1..100ms = %s, want %s", q, got, want)
		}
	}
	// 10 samples: P50 is the 5th, P95 and P99 round up to the 10th, P1 is the 1st.
	ten := ms2d(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for q, want := range map[float64]int{1: 1, 50: 5, 51: 6, 95: 10, 99: 10} {
		if got := Percentile(ten, q); got != time.Duration(want)*time.Millisecond {
			t.Errorf("P%g of 1..10ms = %s, want %dms", q, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of no samples must be 0")
	}
}

func TestSummarizeSortsAndComputesEveryField(t *testing.T) {
	s := ms2d(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	got := Summarize(s)
	want := Latency{Count: 10, P50: 5 * time.Millisecond, P95: 10 * time.Millisecond, P99: 10 * time.Millisecond,
		Max: 10 * time.Millisecond, Mean: 5500 * time.Microsecond}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if (Summarize(nil) != Latency{}) {
		t.Error("Summarize(nil) must be zero")
	}
}

func TestFreshnessMatchesEachMarkToFirstQueryableSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(msec int) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }
	accepted := []Mark{{at(0), 0}, {at(100), 100}, {at(200), 250}, {at(300), 400}, {at(400), 500}}
	queryable := []Mark{{at(100), 0}, {at(500), 100}, {at(900), 400}, {at(1300), 400}}
	delays, unreached := Freshness(accepted, queryable)
	// 100 rows: queryable at 500 → 400ms; 250 and 400 rows: queryable at 900 → 700ms and 600ms;
	// 500 rows never; the zero mark is ignored.
	want := ms2d(400, 700, 600)
	if len(delays) != len(want) || unreached != 1 {
		t.Fatalf("delays %v unreached %d, want %v and 1", delays, unreached, want)
	}
	for i := range want {
		if delays[i] != want[i] {
			t.Errorf("delay[%d] = %s, want %s", i, delays[i], want[i])
		}
	}
}

func TestFreshnessNeverNegative(t *testing.T) {
	t0 := time.Unix(1000, 0)
	// A count sampled just before the mark already covers it (both sampled in the same tick).
	delays, unreached := Freshness([]Mark{{t0.Add(time.Millisecond), 10}}, []Mark{{t0, 10}})
	if unreached != 0 || len(delays) != 1 || delays[0] != 0 {
		t.Errorf("delays %v unreached %d, want [0s] 0", delays, unreached)
	}
}

func TestParseCountReadsObjectOrArrayRows(t *testing.T) {
	for body, want := range map[string]int64{
		`{"meta":[{"name":"n","type":"UInt64"}],"data":[{"n":"42"}],"rows":1}`: 42,
		`{"data":[[7]]}`:                      7,
		`{"data":[{"count()":123456789012}]}`: 123456789012,
	} {
		got, err := parseCount([]byte(body))
		if err != nil || got != want {
			t.Errorf("parseCount(%s) = %d, %v; want %d", body, got, err, want)
		}
	}
	for _, bad := range []string{`{}`, `{"data":[]}`, `{"data":[{"a":1,"b":2}]}`, `{"data":[["x"]]}`, `nope`} {
		if _, err := parseCount([]byte(bad)); err == nil {
			t.Errorf("parseCount(%s) accepted", bad)
		}
	}
}

func TestMaskDigitsGroupsMessagesDifferingInNumbers(t *testing.T) {
	a, b := maskDigits("Code: 252, Too many parts (301)"), maskDigits("Code: 252, Too many parts (315)")
	if a != b || a != "Code: N, Too many parts (N)" {
		t.Errorf("maskDigits = %q and %q", a, b)
	}
}
