package harness

import (
	"strings"
	"testing"
	"time"
)

func TestTransportTargetsCompareEachSocketWithSSEAndPOST(t *testing.T) {
	r := &Results{Transport: []TransportResult{
		{Name: TransportOneSocket, D: same(3, 2*time.Millisecond), Inside: Floats{1.8, 1.8, 1.8}, Overhead: Floats{0.2, 0.2, 0.2}},
		{Name: TransportSSEPost, D: same(3, 3*time.Millisecond), Inside: Floats{1.8, 1.8, 1.8}, Overhead: Floats{1.2, 1.2, 1.2}},
		{Name: TransportRemoteTLS, D: same(3, 2*time.Millisecond), Inside: Floats{1.6, 1.6, 1.6}, Overhead: Floats{0.4, 0.4, 0.4}},
	}}
	ts := r.transportTargets()
	if len(ts) != 3 {
		t.Fatalf("%d targets, want 3: %+v", len(ts), ts)
	}
	if !ts[0].Met || !strings.Contains(ts[0].Goal, TransportOneSocket) || !strings.Contains(ts[0].Measured, "×0.17 of SSE + POST") {
		t.Errorf("one socket: %+v", ts[0])
	}
	if ts[1].Met || !strings.Contains(ts[1].Goal, TransportRemoteTLS) {
		t.Errorf("remote over its target: %+v", ts[1])
	}
	if !ts[2].Ref || ts[2].Verdict() != "for comparison (over the target)" {
		t.Errorf("SSE + POST is a comparison row: %+v", ts[2])
	}
	var b strings.Builder
	r.Render(&b)
	for _, want := range []string{"## 10. Extension transports side by side", "| " + TransportRemoteTLS + " | 2.000 ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
