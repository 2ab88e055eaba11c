// Command benchreport measures browserchain's backends side by side on one
// machine and writes BENCHMARKS.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/browserchain/browserchain/bench/harness"
)

func main() {
	ctx := context.Background()
	harness.Progress = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "benchreport: "+f+"\n", a...) }
	w, err := harness.NewWorld(ctx, "..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer w.Close()
	res, err := harness.MeasureEvaluate(ctx, w, 50, 5)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, r := range res {
		fmt.Println(r.Name, r.D.Median(), r.D.P99(), r.Inside.Median(), r.Overhead.Median())
	}
	shots, err := harness.MeasureScreenshots(ctx, w, map[string]int{"≈1.5 MB": 3, "≈8 MB": 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, r := range shots {
		fmt.Println(r.Name, r.Size.Label, r.PNG, r.D.Median(), r.Peak.Median(), r.Alloc.Median())
	}
}
