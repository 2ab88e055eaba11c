package chromiumtest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// RawTab is a bare browser WebSocket with a flat session on one page
// target: the baseline of the benchmarks that compare a path of the library
// with the raw protocol. Not safe for concurrent use; a failure ends the
// test or benchmark (Fatal).
type RawTab struct {
	tb testing.TB
	ws *websocket.Conn
	id int
	// SessionID is the flat session on the page.
	SessionID string
}

// DialRawTab dials the browser at wsURL (its browser WebSocket URL) and
// attaches to the page target whose URL is pageURL, or to the first page
// when pageURL is "". Replies of up to 256 MiB are read. The socket is
// closed at the test's cleanup.
func DialRawTab(tb testing.TB, wsURL, pageURL string) *RawTab {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(256 << 20)
	r := &RawTab{tb: tb, ws: ws}
	var list struct {
		TargetInfos []struct{ TargetID, Type, URL string } `json:"targetInfos"`
	}
	if err := json.Unmarshal(r.Call("Target.getTargets", "", ""), &list); err != nil {
		tb.Fatal(err)
	}
	var target string
	for _, t := range list.TargetInfos {
		if t.Type == "page" && (pageURL == "" || t.URL == pageURL) {
			target = t.TargetID
			break
		}
	}
	if target == "" {
		tb.Fatal("chromiumtest: no page at " + pageURL)
	}
	var att struct{ SessionID string }
	if err := json.Unmarshal(r.Call("Target.attachToTarget", "", `{"targetId":"`+target+`","flatten":true}`), &att); err != nil {
		tb.Fatal(err)
	}
	r.SessionID = att.SessionID
	return r
}

// Call sends method with params (JSON text, "" for none) on sessionID (""
// for the browser) and returns the reply's result, skipping events and
// other replies. It waits at most a minute.
func (r *RawTab) Call(method, sessionID, params string) json.RawMessage {
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
		r.tb.Fatal(err)
	}
	for {
		_, data, err := r.ws.Read(ctx)
		if err != nil {
			r.tb.Fatal(err)
		}
		var f struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			r.tb.Fatal(err)
		}
		if f.ID == r.id {
			return f.Result
		}
	}
}
