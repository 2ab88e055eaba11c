package cdpinspect_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// rawSession is the baseline: a bare WebSocket to the browser with a flat
// session, one command at a time, reading replies on the caller's goroutine.
type rawSession struct {
	b   testing.TB
	ws  *websocket.Conn
	id  int
	sid string
}

func newRawSession(b testing.TB, wsURL string) *rawSession {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(256 << 20)
	r := &rawSession{b: b, ws: ws}
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	_ = json.Unmarshal(r.roundTrip("Target.getTargets", "", ""), &targets)
	var target string
	for _, t := range targets.TargetInfos {
		if t.Type == "page" {
			target = t.TargetID
			break
		}
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(r.roundTrip("Target.attachToTarget", "", `{"targetId":"`+target+`","flatten":true}`), &att)
	r.sid = att.SessionID
	return r
}

func (r *rawSession) roundTrip(method, sessionID, params string) json.RawMessage {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.id++
	msg := `{"id":` + strconv.Itoa(r.id) + `,"method":"` + method + `"`
	if params != "" {
		msg += `,"params":` + params
	}
	if sessionID != "" {
		msg += `,"sessionId":"` + sessionID + `"`
	}
	msg += "}"
	if err := r.ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		r.b.Fatal(err)
	}
	for {
		_, data, err := r.ws.Read(ctx)
		if err != nil {
			r.b.Fatal(err)
		}
		var f struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			r.b.Fatal(err)
		}
		if f.ID == r.id {
			return f.Result
		}
	}
}

// BenchmarkRuntimeEvaluate measures one Runtime.evaluate("1+1") round trip
// on a page session, through the Backend (multiplexer, reader goroutine,
// deadline, error classification) and over a raw WebSocket (rawSession),
// both on the same browser. Each iteration runs one of each, alternately,
// so machine load hits both alike; the reported metrics are the medians and
// their ratio (backend/raw; the INS-2 target is ≤ 1.10).
//
//	go test -run XXX -bench RuntimeEvaluate -benchtime 3000x ./cdpinspect/
func BenchmarkRuntimeEvaluate(b *testing.B) {
	br := chromiumtest.Start(b)
	be := dialBrowser(b, br)
	raw := newRawSession(b, br.BrowserWSURL)
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
			raw.roundTrip("Runtime.evaluate", raw.sid, `{"expression":"1+1"}`)
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
