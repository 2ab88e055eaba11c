package cdpinspect

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// frame is one CDP JSON-RPC message in either direction: a command
// {id, method, params, sessionId}, a reply {id, result | error, sessionId},
// or an event {method, params, sessionId}.
type frame struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    sharedRaw       `json:"result,omitempty"`
	Error     *rpcError       `json:"error,omitempty"`
}

// sharedRaw is a raw JSON value that, when decoded, refers to the bytes of
// the frame it came from instead of copying them as json.RawMessage does.
// Each frame is a buffer of its own (websocket.Conn.Read allocates one per
// message) that nothing else writes to, so a reply's result keeps the only
// copy: for an 8 MB screenshot that is about 11 MB not allocated again.
type sharedRaw []byte

// MarshalJSON returns r as it is ("null" when empty).
func (r sharedRaw) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps data itself: a sub-slice of the frame being decoded.
func (r *sharedRaw) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// rpcError is the error object of a CDP reply.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// reply is what the reader hands to a waiting call: the CDP reply, or fail
// when the call's session went away before a reply came.
type reply struct {
	result json.RawMessage
	err    *rpcError
	fail   *bb.Error
}

// pendingCall is one command waiting for its reply.
type pendingCall struct {
	ch        chan reply // buffered (1); one value or a close
	sessionID string
}

// conn multiplexes CDP commands over one browser-level WebSocket: a single
// reader goroutine routes replies to waiting calls by id and hands events to
// onEvent. It is the ~150-line replacement for rpcc plus a session-routing
// codec (see the package doc for why).
type conn struct {
	ws      *websocket.Conn
	log     *slog.Logger
	onEvent func(frame) // runs on the reader goroutine; must not block
	onEnd   func()      // runs on the reader goroutine after the last frame
	// lostHook, set by a test (settings.connLost), runs on the reader
	// goroutine between failing the waiting calls of a lost connection
	// and onEnd.
	lostHook func()

	mu      sync.Mutex
	nextID  int64
	pending map[int64]pendingCall
	err     *bb.Error // set once the connection is finished; fails all calls

	track *bb.InFlight // the commands in flight, for timeout diagnostics

	done chan struct{} // closed when the reader has exited
}

// dialConn opens the browser WebSocket of ep, bounded by timeout, connecting
// only to ep's checked loopback addresses.
func dialConn(ctx context.Context, ep Endpoint, s *settings, onEvent func(frame), onEnd func()) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, s.probeTimeout)
	defer cancel()
	rec := &dialRecord{}
	ws, resp, err := websocket.Dial(dctx, ep.BrowserWSURL, &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: pinnedTransport(ep.addrs, rec)},
	})
	if err != nil {
		dialed, _ := rec.get()
		var e *bb.Error
		switch {
		case ctx.Err() != nil:
			return nil, abortErr(ctx)
		case dctx.Err() != nil:
			e = discoveryErr(bb.CodeUnresponsive, fmt.Sprintf("WebSocket handshake took longer than the probe timeout (%v)", s.probeTimeout), err)
		case !dialed:
			e = discoveryErr(bb.CodeUnreachable, "WebSocket: nothing is listening (the browser may have exited)", err)
		case resp != nil:
			e = discoveryErr(bb.CodeNonChrome, fmt.Sprintf("WebSocket handshake refused with HTTP %d", resp.StatusCode), err)
		default:
			e = discoveryErr(bb.CodeInvalidResponse, "WebSocket handshake failed", err)
		}
		e.Message = "connect: " + e.Message[len("discovery: "):]
		return nil, e
	}
	ws.SetReadLimit(s.readLimit)
	c := &conn{
		ws:       ws,
		log:      s.logger,
		onEvent:  onEvent,
		onEnd:    onEnd,
		lostHook: s.connLost,
		pending:  make(map[int64]pendingCall),
		track:    bb.NewInFlight(s.now),
		done:     make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// readLoop reads frames until the socket fails or is closed, then fails
// every waiting call.
func (c *conn) readLoop() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.finish(&bb.Error{
				Class:      bb.ClassTransport,
				Code:       bb.CodeTransportError,
				Backend:    bb.KindCDPInspect,
				Dispatched: true,
				Message:    "browser connection lost",
				Err:        err,
			})
			if c.lostHook != nil {
				c.lostHook()
			}
			if c.onEnd != nil {
				c.onEnd()
			}
			return
		}
		var f frame
		if err := decodeFrame(data, &f); err != nil {
			c.log.Warn("cdpinspect: dropping malformed frame", "bytes", len(data), "err", err)
			continue
		}
		if f.ID == 0 {
			// The event first, then the failures it causes: a caller that
			// sees its command fail (target_crashed, cdp_session_not_found)
			// and builds its next invocation at once must find the session
			// already marked crashed or gone, or it is handed the dead
			// session again (a navigation's Page.enable on a crashed tab
			// then waits in Chrome until its deadline).
			if f.Method != "" && c.onEvent != nil {
				c.onEvent(f)
			}
			if f.Method == bb.MethodTargetDetached {
				// Chrome never answers the commands still waiting on a
				// detached session: fail them now, not at their deadline.
				var p struct {
					SessionID string `json:"sessionId"`
				}
				if json.Unmarshal(f.Params, &p) == nil {
					c.failSession(p.SessionID, sessionGoneErr(""))
				}
			}
			if f.Method == methodTargetCrashed {
				// The page's renderer died: Chrome answers none of the
				// session's pending commands, so fail them now.
				c.failSession(f.SessionID, crashedErr(""))
			}
			continue
		}
		c.mu.Lock()
		pc, ok := c.pending[f.ID]
		delete(c.pending, f.ID)
		c.mu.Unlock()
		if !ok {
			c.log.Debug("cdpinspect: reply for unknown id dropped", "id", f.ID)
			continue
		}
		pc.ch <- reply{result: json.RawMessage(f.Result), err: f.Error} // buffered (1): never blocks
	}
}

// finish records why the connection ended (the first reason wins) and
// fails every waiting call with it. It does not close the socket.
func (c *conn) finish(e *bb.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = e
	}
	for id, pc := range c.pending {
		delete(c.pending, id)
		close(pc.ch)
	}
}

// failSession fails every waiting call on sessionID with e (Method set per
// call): Chrome sends no reply for commands of a session that detached
// (tab closed, target crashed), so without this they would wait for their
// deadline. It runs on the reader goroutine and never blocks.
func (c *conn) failSession(sessionID string, e *bb.Error) {
	if sessionID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, pc := range c.pending {
		if pc.sessionID != sessionID {
			continue
		}
		delete(c.pending, id)
		pc.ch <- reply{fail: e} // buffered (1), and removed from the map: never blocks
	}
}

// close ends the connection with e (ClassClosed from Backend.Close), drops
// the socket and waits for the reader. Idempotent.
func (c *conn) close(e *bb.Error) {
	c.finish(e)
	_ = c.ws.CloseNow()
	<-c.done
}

// lost reports whether the connection has ended (its waiting calls are
// failed from then on, before onEnd runs).
func (c *conn) lost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// failure returns the error that ended the connection, for method.
func (c *conn) failure(method string) *bb.Error {
	c.mu.Lock()
	e := *c.err
	c.mu.Unlock()
	e.Method = method
	return &e
}

// call sends one command and waits for its reply, ctx's end, or the end of
// the connection. ctx must carry a deadline (Backend.Send adds one).
func (c *conn) call(ctx context.Context, method string, params json.RawMessage, sessionID string) (json.RawMessage, error) {
	if ctx.Err() != nil {
		return nil, ctxErr(ctx, method, false)
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		e := c.failure(method)
		e.Dispatched = false
		return nil, e
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = pendingCall{ch: ch, sessionID: sessionID}
	c.mu.Unlock()
	end := c.track.Begin()
	defer end(false) // given up or failed; an answer ends it first

	data, err := json.Marshal(frame{ID: id, Method: method, Params: params, SessionID: sessionID})
	if err != nil {
		c.forget(id)
		return nil, &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeInvalidParams, Method: method, Backend: bb.KindCDPInspect,
			Message: "params are not valid JSON", Err: err}
	}
	// A cancelled context makes coder/websocket close the whole socket, so
	// the write gets its own bound instead of the caller's cancellation.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	err = c.ws.Write(wctx, websocket.MessageText, data)
	cancel()
	if err != nil {
		c.forget(id)
		c.mu.Lock()
		ended := c.err != nil
		c.mu.Unlock()
		if ended {
			e := c.failure(method)
			e.Dispatched = false
			return nil, e
		}
		return nil, &bb.Error{Class: bb.ClassTransport, Code: bb.CodeTransportError, Method: method,
			Backend: bb.KindCDPInspect, Message: "write to browser failed", Err: err}
	}

	select {
	case r, ok := <-ch:
		end(ok && r.fail == nil) // a reply, result or CDP error, is an answer
		if !ok {                 // the connection ended after the command was written
			e := c.failure(method)
			e.Dispatched = true
			return nil, e
		}
		if r.fail != nil {
			e := *r.fail
			e.Method, e.Dispatched = method, true
			return nil, &e
		}
		if r.err != nil {
			e := bb.ProtocolError(r.err.Code, r.err.Message)
			if len(r.err.Data) > 0 {
				e.Message += ": " + string(r.err.Data)
			}
			e.Method, e.Backend, e.Dispatched = method, bb.KindCDPInspect, true
			return nil, e
		}
		if len(r.result) == 0 {
			return json.RawMessage("{}"), nil
		}
		return r.result, nil
	case <-ctx.Done():
		c.forget(id)
		e := ctxErr(ctx, method, true)
		if e.Class == bb.ClassTimeout {
			// Counted before end: the timed-out command is among them.
			e.Diagnostics = c.track.Diagnostics()
		}
		return nil, e
	}
}

// methodTargetCrashed is the event Chrome sends on a session whose
// target's renderer crashed; methodTargetReloaded the one it sends when a
// crashed target got a renderer again.
const (
	methodTargetCrashed   = "Inspector.targetCrashed"
	methodTargetReloaded  = "Inspector.targetReloadedAfterCrash"
	methodInspectorEnable = "Inspector.enable"
	methodPageNavigate    = "Page.navigate"
)

// answeredWhenCrashed reports whether Chrome answers method on a tab whose
// renderer crashed: Page.navigate (which gives the tab a new renderer) and
// the Target domain (served by the browser process, e.g. the host-bridge
// backend's Target.getTargetInfo probe).
func answeredWhenCrashed(method string) bool {
	return method == methodPageNavigate || strings.HasPrefix(method, "Target.")
}

// pageLostErr is the error of a command on a tab whose renderer crashed
// before it was sent (see Backend.Send).
func pageLostErr(method string) *bb.Error {
	return &bb.Error{Class: bb.ClassClosed, Code: bb.CodePageLost, Method: method, Backend: bb.KindCDPInspect,
		Message: "the tab's renderer crashed and its content is gone; navigate again (Page.navigate revives the tab)"}
}

// crashedErr is the error of a command whose page's renderer crashed.
func crashedErr(method string) *bb.Error {
	return &bb.Error{Class: bb.ClassTransport, Code: bb.CodeTargetCrashed, Method: method, Backend: bb.KindCDPInspect,
		Message: "the page's renderer crashed"}
}

// ctxErr classifies the end of a command's context: a passed deadline is
// ClassTimeout (outcome unknown when dispatched), anything else is the
// caller's cancellation (ClassAborted).
func ctxErr(ctx context.Context, method string, dispatched bool) *bb.Error {
	e := bb.ContextError(ctx, method, dispatched)
	e.Backend = bb.KindCDPInspect
	return e
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// withDeadline returns ctx with d added when it has no deadline yet.
func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
