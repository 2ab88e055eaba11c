package cdpinspect_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// BenchmarkRuntimeEvaluate measures one Runtime.evaluate("1+1") round trip
// on a page session, through the Backend (multiplexer, reader goroutine,
// deadline, error classification) and over a raw WebSocket (chromiumtest.RawTab),
// both on the same browser. Each iteration runs one of each, alternately,
// so machine load hits both alike; the reported metrics are the medians and
// their ratio (backend/raw; the INS-2 target is ≤ 1.10).
//
//	go test -run XXX -bench RuntimeEvaluate -benchtime 3000x ./cdpinspect/
func BenchmarkRuntimeEvaluate(b *testing.B) {
	br := chromiumtest.Start(b)
	be := dialBrowser(b, br)
	raw := chromiumtest.DialRawTab(b, br.BrowserWSURL, "")
	params := json.RawMessage(`{"expression":"1+1"}`)
	ctx := context.Background()
	var tb, tr []time.Duration
	i := 0
	for b.Loop() {
		backend := func() {
			t0 := time.Now()
			if _, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: params}); err != nil {
				b.Fatal(err)
			}
			tb = append(tb, time.Since(t0))
		}
		direct := func() {
			t0 := time.Now()
			raw.Call("Runtime.evaluate", raw.SessionID, `{"expression":"1+1"}`)
			tr = append(tr, time.Since(t0))
		}
		if i%2 == 0 {
			backend()
			direct()
		} else {
			direct()
			backend()
		}
		i++
	}
	mb, mr := median(tb), median(tr)
	b.ReportMetric(float64(mb.Microseconds()), "backend-µs/median")
	b.ReportMetric(float64(mr.Microseconds()), "raw-µs/median")
	b.ReportMetric(float64(mb)/float64(mr), "ratio")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkDial measures Provider-style construction: discovery through
// DevToolsActivePort, WebSocket handshake, target lookup, attach, Close.
func BenchmarkDial(b *testing.B) {
	br := chromiumtest.Start(b)
	for b.Loop() {
		be := dialBrowser(b, br)
		be.Close()
	}
}
