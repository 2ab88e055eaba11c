package harness_test

import (
	"fmt"
	"time"

	"github.com/browserchain/browserchain/bench/harness"
)

// Figures are reported as nearest-rank median and p99.
func ExampleDurations() {
	var d harness.Durations
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*100*time.Microsecond)
	}
	fmt.Println(d.Median(), d.P99())
	// Output: 10ms 19.8ms
}
