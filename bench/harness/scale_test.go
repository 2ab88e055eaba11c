package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/bench/harness"
)

// The scale phase runs end to end over the real wire (few clients, no local
// browser): every answer is checked, the costs are measured, and its rows
// and targets are rendered.
func TestMeasureScaleChecksEveryAnswerAndRendersItsRows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := harness.MeasureScale(ctx, harness.ScaleOptions{Clients: 4, Conversations: 12, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want socket and POST", len(r.Runs))
	}
	for _, run := range r.Runs {
		if len(run.D) != 12*3 || run.Commands != 12*3 {
			t.Fatalf("%s: %d round trips recorded, %d commands; want 36", run.Transport, len(run.D), run.Commands)
		}
		if run.Idle.Units != 4 || run.Idle.Heap <= 0 || run.Idle.GoroutinesRuntime <= 0 || run.Idle.GoroutinesClient <= 0 {
			t.Errorf("%s: idle costs not measured: %+v", run.Transport, run.Idle)
		}
	}
	var b bytes.Buffer
	(&harness.Results{Scale: &r}).Render(&b)
	for _, want := range []string{"## 9. Scale", "12 conversations over 4 clients | result socket",
		"12 conversations over 4 clients | result POSTs", "4 clients connected, idle",
		"scale: zero lost, duplicated or cross-delivered answers", "| met |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A wrong answer fails the phase and misses its target.
func TestScaleMismatchFailsThePhase(t *testing.T) {
	r := harness.ScaleResult{Conversations: 1, Clients: 1, Runs: []harness.ScaleRun{{Transport: harness.ScalePOST,
		D: harness.Durations{time.Millisecond}, Elapsed: time.Second}}}
	r.Runs[0].CrossDelivered = 1
	r.Runs[0].FirstError = `wanted "a", answered "b"`
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "1 cross-delivered") {
		t.Fatalf("Err() = %v", err)
	}
	r.Runs[0].CrossDelivered = 0
	r.Runs[0].FirstError = ""
	r.Local = &harness.ScaleLocal{ScaleCheck: harness.ScaleCheck{Lost: 2, FirstError: "timeout"}}
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "2 lost") {
		t.Fatalf("Err() = %v, want the local loss", err)
	}
	for _, tg := range (&harness.Results{Scale: &r}).Targets() {
		if strings.Contains(tg.Goal, "zero lost") && tg.Met {
			t.Errorf("target %q met with a lost answer", tg.Goal)
		}
	}
}
