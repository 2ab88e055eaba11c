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
	if len(r.D) != 12*3 || r.Commands != 12*3 {
		t.Fatalf("%d round trips recorded, %d commands; want 36", len(r.D), r.Commands)
	}
	if r.Idle.Units != 4 || r.Idle.Heap <= 0 || r.Idle.GoroutinesRuntime <= 0 || r.Idle.GoroutinesClient <= 0 {
		t.Errorf("idle costs not measured: %+v", r.Idle)
	}
	var b bytes.Buffer
	(&harness.Results{Scale: &r}).Render(&b)
	for _, want := range []string{"## 8. Scale", "12 conversations over 4 clients", "4 clients connected, idle",
		"scale: zero lost, duplicated or cross-delivered answers", "| met |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A wrong answer fails the phase and misses its target.
func TestScaleMismatchFailsThePhase(t *testing.T) {
	r := harness.ScaleResult{Conversations: 1, Clients: 1, D: harness.Durations{time.Millisecond}, Elapsed: time.Second}
	r.CrossDelivered = 1
	r.FirstError = `wanted "a", answered "b"`
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "1 cross-delivered") {
		t.Fatalf("Err() = %v", err)
	}
	r.CrossDelivered = 0
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
