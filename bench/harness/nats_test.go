package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/bench/harness"
)

// The distributed phase runs end to end on a real broker (few samples) and
// its rows and target are rendered.
func TestMeasureDistributedRendersItsRows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := harness.MeasureDistributed(ctx, 20, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.InProcess) == 0 || len(d.AcrossReplicas) != len(d.InProcess) || len(d.ShotAcross) != 1 || len(d.Convergence) != 2 {
		t.Fatalf("samples missing: %+v", d)
	}
	var b bytes.Buffer
	(&harness.Results{Distributed: &d}).Render(&b)
	for _, want := range []string{"## 6. Distributed hub (NATS)", "replica A → client on B", "roster convergence",
		"request from replica A to a client on replica B"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	t.Logf("\n%s", b.String())
}
