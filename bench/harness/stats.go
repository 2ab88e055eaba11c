package harness

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Durations is a set of timings of one figure.
type Durations []time.Duration

// Quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank method;
// 0 for an empty set.
func (d Durations) Quantile(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median is Quantile(0.5).
func (d Durations) Median() time.Duration { return d.Quantile(0.5) }

// P99 is Quantile(0.99).
func (d Durations) P99() time.Duration { return d.Quantile(0.99) }

// Floats is a set of plain numbers (bytes, ms from another clock, rates).
type Floats []float64

// Quantile is the nearest-rank q-quantile; NaN for an empty set.
func (f Floats) Quantile(q float64) float64 {
	if len(f) == 0 {
		return math.NaN()
	}
	s := slices.Clone(f)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median is Quantile(0.5).
func (f Floats) Median() float64 { return f.Quantile(0.5) }

// P99 is Quantile(0.99).
func (f Floats) P99() float64 { return f.Quantile(0.99) }

// Max is the largest value; NaN for an empty set.
func (f Floats) Max() float64 { return f.Quantile(1) }

// ms formats d in milliseconds with a precision that suits its size.
func ms(d time.Duration) string {
	return msf(float64(d) / float64(time.Millisecond))
}

// msf formats a millisecond value.
func msf(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) < 10:
		return fmt.Sprintf("%.3f ms", v)
	case math.Abs(v) < 1000:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f s", v/1000)
	}
}

// mib formats a byte count in MiB (or KiB when small).
func mib(b float64) string {
	switch {
	case math.IsNaN(b):
		return "n/a"
	case math.Abs(b) < 1<<20:
		return fmt.Sprintf("%.0f KiB", b/1024)
	default:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
}

// ratio formats a/b as "×1.23"; "n/a" when b is 0.
func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "n/a"
	}
	return fmt.Sprintf("×%.2f", a/b)
}

// Progress receives one line per step of the run (stderr in benchreport).
var Progress = func(format string, args ...any) {}

// rounds yields, per round, the indexes 0…n-1 in an order shuffled with a
// fixed seed, so that no path always follows the same other path.
type rounds struct {
	rng   *rand.Rand
	order []int
}

func newRounds(n int) *rounds {
	r := &rounds{rng: rand.New(rand.NewPCG(7, 7)), order: make([]int, n)}
	for i := range r.order {
		r.order[i] = i
	}
	return r
}

func (r *rounds) next() []int {
	r.rng.Shuffle(len(r.order), func(a, b int) { r.order[a], r.order[b] = r.order[b], r.order[a] })
	return r.order
}
