package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// WorkerProbe is what one loopback message costs inside the extension's
// service worker, measured by the worker's own clock (performance.now):
// a fetch POST round trip (as the relay posts each result) and a WebSocket
// echo round trip, both to a Go server on 127.0.0.1.
type WorkerProbe struct {
	FetchPost Floats // ms
	WSEcho    Floats // ms
}

// probeHandler serves POST /probe/post (204) and a WebSocket echo at
// /probe/ws that accepts the extension's origin.
func probeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /probe/post", func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		_ = json.NewDecoder(r.Body).Decode(&v)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/probe/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{ExtensionID}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, data); err != nil {
				return
			}
		}
	})
	return mux
}

// workerProbeJS runs n fetch POSTs, then n WebSocket echoes, one at a time,
// and returns both sets of round trips in ms.
const workerProbeJS = `(async () => {
  const n = %d, base = %q;
  const body = JSON.stringify({requestId: 'probe', content: '{"result":{"type":"number","value":2}}', isError: false});
  const post = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fetch(base + '/probe/post', {method: 'POST', headers: {'Content-Type': 'application/json'}, body, cache: 'no-store'});
    await r.arrayBuffer();
    post.push(performance.now() - t);
  }
  const ws = new WebSocket(base.replace('http', 'ws') + '/probe/ws');
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error('websocket failed')); });
  const echo = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await new Promise((ok) => { ws.onmessage = ok; ws.send(body); });
    echo.push(performance.now() - t);
  }
  ws.close();
  return {post, echo};
})()`

// MeasureWorker runs the probe in the world extension's service worker
// (through a CDP session on the worker target).
func MeasureWorker(ctx context.Context, w *World, n int) (WorkerProbe, error) {
	srv, err := loopbackServer(probeHandler())
	if err != nil {
		return WorkerProbe{}, err
	}
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	r, err := DialRaw(ctx, w.Chromium.WSURL)
	if err != nil {
		return WorkerProbe{}, err
	}
	defer r.Close()
	res, err := r.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return WorkerProbe{}, err
	}
	var ts struct {
		TargetInfos []struct{ TargetID, Type, URL string } `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &ts)
	worker := ""
	for _, t := range ts.TargetInfos {
		if t.Type == "service_worker" && strings.HasPrefix(t.URL, "chrome-extension://"+ExtensionID+"/") {
			worker = t.TargetID
		}
	}
	if worker == "" {
		return WorkerProbe{}, errors.New("benchreport: no extension service worker target")
	}
	if err := r.Attach(ctx, worker); err != nil {
		return WorkerProbe{}, err
	}
	defer r.Call(context.Background(), "", "Target.detachFromTarget", json.RawMessage(`{"sessionId":"`+r.SessionID+`"}`))
	expr := fmt.Sprintf(workerProbeJS, n, srv.URL)
	params, _ := json.Marshal(map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(n)*200*time.Millisecond+stepTimeout)
	defer cancel()
	res, err = r.Send(ctx, "Runtime.evaluate", params)
	if err != nil {
		return WorkerProbe{}, err
	}
	var ev struct {
		Result struct {
			Value struct {
				Post []float64 `json:"post"`
				Echo []float64 `json:"echo"`
			} `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &ev); err != nil {
		return WorkerProbe{}, err
	}
	if len(ev.ExceptionDetails) > 0 {
		return WorkerProbe{}, fmt.Errorf("benchreport: worker probe: %s", ev.ExceptionDetails)
	}
	// Drop the first of each (connection set-up).
	p, e := ev.Result.Value.Post, ev.Result.Value.Echo
	if len(p) > 1 {
		p = p[1:]
	}
	if len(e) > 1 {
		e = e[1:]
	}
	return WorkerProbe{FetchPost: p, WSEcho: e}, nil
}
