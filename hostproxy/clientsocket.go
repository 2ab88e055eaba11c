package hostproxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// clientFrame is every client → server frame of a client socket: the
// remote device socket (package hostproxy/remote) and the result socket in
// its subscribed mode. Its fields are the union of
// ResultBody, EventBody and InvalidationBody, so a frame is the matching
// POST body plus its "type".
type clientFrame struct {
	Type     string `json:"type"`
	ClientID string `json:"clientId,omitempty"`
	ResultBody
	Method       string          `json:"method,omitempty"`
	Params       json.RawMessage `json:"params,omitempty"`
	CDPSessionID string          `json:"cdpSessionId,omitempty"`
	SessionID    string          `json:"sessionId,omitempty"`
	TabID        json.RawMessage `json:"tabId,omitempty"`
	TargetID     string          `json:"targetId,omitempty"`
	Reason       string          `json:"reason,omitempty"`
}

// FrameReply is the server's answer to one client frame:
// {"type":"accepted","requestId"} for a delivered result, or
// {"type":"error","requestId"?,"status","code","error"} with the status and
// code the matching POST route would have answered.
type FrameReply struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	Status    int    `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Handle acts on one JSON frame that a client socket bound to
// clientID and actor received, as the POST routes (Mount) act on their
// bodies, with the socket's binding in place of the header and the
// credential. The frames, by "type":
//
//   - "result" ResultBody: answered accepted, or error with the result
//     route's status and code;
//   - "host_browser_event" EventBody, charged to the client's event budget,
//     and "host_browser_session_invalidated" InvalidationBody: answered only
//     when refused (400 missing_method, 403, 404, 429 events_shed);
//   - "hello": no effect.
//
// A frame whose "clientId" names another client is refused (403
// client_mismatch). Malformed JSON is 400 malformed_body, any other type 400
// bad_type. ok is false when no reply is due. tr labels results in
// Options.OnResult.
func (cf ClientFrames) Handle(clientID, actor string, tr Transport, data []byte) (reply FrameReply, ok bool) {
	p := cf.p
	f, fast := clientFrame{}, false
	if len(data) >= fastFrameMin {
		f, fast = decodeResultFrame(data)
	}
	if !fast {
		f = clientFrame{}
		if err := json.Unmarshal(data, &f); err != nil {
			return FrameReply{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "malformed_body",
				Error: "hostproxy: the frame is not a JSON object"}, true
		}
	}
	if f.ClientID != "" && f.ClientID != clientID {
		p.log.Warn("socket frame names another client", "transport", string(tr), "clientId", clientID, "type", f.Type)
		return FrameReply{Type: wire.SocketError, RequestID: f.RequestID, Status: http.StatusForbidden, Code: "client_mismatch",
			Error: "hostproxy: this socket speaks only for client " + clientID}, true
	}
	var rej *refusal
	switch f.Type {
	case wire.RemoteHello:
		return FrameReply{}, false
	case wire.SocketResult:
		if f.RequestID == "" {
			rej = &refusal{http.StatusBadRequest, "missing_request_id", "requestId is required"}
		} else if rej = p.acceptResult(f.ResultBody, clientID, actor, tr, data); rej == nil {
			return FrameReply{Type: wire.SocketAccepted, RequestID: f.RequestID}, true
		}
	case wire.RemoteEvent:
		if f.Method == "" {
			return FrameReply{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "missing_method",
				Error: "hostproxy: an event needs a method"}, true
		}
		body := EventBody{Method: f.Method, CDPSessionID: f.CDPSessionID, SessionID: f.SessionID, TabID: f.TabID}
		rej = p.frameEvent(clientID, actor, browserbackend.Event{Method: f.Method, Params: f.Params, SessionID: body.Session()},
			body.Tab(), true, tr)
	case wire.RemoteSessionInvalidated:
		params, _ := json.Marshal(InvalidationBody{SessionID: f.SessionID, TargetID: f.TargetID, Reason: f.Reason})
		rej = p.frameEvent(clientID, actor,
			browserbackend.Event{Method: browserbackend.MethodTargetDetached, Params: params, SessionID: f.SessionID}, "", false, tr)
	default:
		return FrameReply{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "bad_type",
			Error: fmt.Sprintf("hostproxy: unknown frame type %q", truncate(f.Type, 64))}, true
	}
	if rej == nil {
		return FrameReply{}, false
	}
	return FrameReply{Type: wire.SocketError, RequestID: f.RequestID, Status: rej.status, Code: rej.code, Error: rej.Error()}, true
}

// frameEvent delivers an event frame of clientID, checked against actor.
func (p *Proxy) frameEvent(clientID, actor string, ev browserbackend.Event, tab string, budgeted bool, tr Transport) *refusal {
	if rej := p.events.check(clientID, actor); rej != nil {
		return rej
	}
	return p.events.accept(clientID, ev, tab, budgeted, string(tr))
}

// FailOversize handles a client socket frame larger than
// MaxBodyBytes, of which prefix holds the first bytes read: when it is a
// result whose "requestId" comes before the cut (a "type" before it, if
// any, must be "result"), that request of clientID fails at once with
// payload_too_large, a protocol-class error to its caller, after the checks
// of any result. It returns the failed request's id, or "". Closing the
// socket is the caller's.
func (cf ClientFrames) FailOversize(clientID, actor string, tr Transport, prefix []byte) string {
	p := cf.p
	id, typ := requestIDPrefixTyped(prefix)
	if id == "" || (typ != "" && typ != wire.SocketResult) {
		return ""
	}
	if !p.failTooLarge(id, clientID, actor, tr) {
		return ""
	}
	p.log.Warn("client socket frame over the body limit; its request failed as payload_too_large",
		"transport", string(tr), "clientId", clientID, "requestId", id, "limit", p.maxBody)
	return id
}

// clientFrameOthers are the clientFrame members a result frame does not
// have: a frame with one of them is decoded by encoding/json.
var clientFrameOthers = []string{"method", "params", "cdpSessionId", "sessionId", "tabId", "targetId", "reason"}

// fastFrameMin is the frame size from which ClientFrames.Handle tries
// decodeResultFrame: below it encoding/json is as fast (the fast path's set-up
// costs a few µs).
const fastFrameMin = 64 << 10

// decodeResultFrame decodes a result frame by the fast path (fastdecode.go):
// an 8 MB screenshot's frame decodes in about a third of the time
// encoding/json takes to decode it into clientFrame. The content is unescaped
// into a copy, since the sockets read their next frame into data's buffer.
// ok is false for any other frame, or one the fast path leaves to
// encoding/json; the result is then exactly json.Unmarshal's.
func decodeResultFrame(data []byte) (f clientFrame, ok bool) {
	var content literal
	if !decodeFast(data, fastMessage{strs: map[string]*string{"type": &f.Type, "clientId": &f.ClientID, "requestId": &f.RequestID},
		content: &content, isError: &f.IsError, slow: clientFrameOthers}) || f.Type != wire.SocketResult {
		return clientFrame{}, false
	}
	if len(content) == 0 {
		return f, true
	}
	b, err := contentOf(literal(bytes.Clone(content)))
	if err != nil {
		return clientFrame{}, false
	}
	b.resolve()
	f.Content = b.Content
	return f, true
}

// EventFramer frames hub events for a client socket (the remote device
// socket and the subscribed result socket):
// {"type":"assistant_event","event":<envelope>}, the envelope as the event
// stream carries it, encoded once into a buffer the framer reuses. The zero
// value is ready; a framer is not safe for concurrent use (one per socket
// writer).
type EventFramer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// eventFramePrefix opens an event frame; the envelope and "}" follow.
const eventFramePrefix = `{"type":"` + wire.RemoteEnvelope + `","event":`

// Frame returns env's frame. The bytes are valid until the next call.
func (f *EventFramer) Frame(env eventhub.Envelope) ([]byte, error) {
	if f.enc == nil {
		f.enc = json.NewEncoder(&f.buf)
	}
	if f.buf.Cap() > 1<<20 {
		f.buf = bytes.Buffer{} // do not keep a large request's buffer per idle socket
		f.enc = json.NewEncoder(&f.buf)
	}
	f.buf.Reset()
	f.buf.WriteString(eventFramePrefix)
	if err := f.enc.Encode(env); err != nil {
		return nil, err
	}
	b := f.buf.Bytes()
	b[len(b)-1] = '}' // over the newline Encode ends with
	return b, nil
}

// serveSubscribed runs a result socket in its subscribed mode until the
// socket, the registration or ctx ends. The registration's end (a newer
// stream of the client, shedding) closes the socket with 1001, and the
// socket's end ends the registration.
func (s *resultSocket) serveSubscribed(ctx context.Context, c *websocket.Conn, auth socketMessage, actor string) {
	p, opts := s.p, s.opts
	clientID := auth.ClientID
	sub, err := opts.Subscriber.Subscribe(eventhub.SubscribeRequest{
		ClientID: clientID, InterfaceID: cmp.Or(auth.InterfaceID, wire.InterfaceChromeExtension),
		MachineName: auth.MachineName, Actor: actor, LastEventID: auth.LastEventID,
	})
	if err != nil {
		p.log.Warn("result socket could not register with the hub", "clientId", clientID, "error", err)
		status := websocket.StatusPolicyViolation
		if errors.Is(err, eventhub.ErrClosed) || errors.Is(err, eventhub.ErrCapacity) {
			status = websocket.StatusTryAgainLater
		}
		c.Close(status, truncate("hostproxy: hub registration failed: "+err.Error(), 120))
		return
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !reply(ctx, c, socketReply{Type: wire.SocketReady, ClientID: clientID, Subscribed: true, MaxBodyBytes: p.maxBody}) {
		return
	}
	p.hub.Touch(clientID)
	ping := cmp.Or(opts.PingInterval, DefaultSocketPingInterval)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the client's hub events
		defer wg.Done()
		var framer EventFramer
		for {
			env, err := sub.Next(ctx)
			if err != nil {
				if ctx.Err() == nil { // replaced, shed or hub closed
					c.Close(websocket.StatusGoingAway, "hostproxy: hub registration ended")
				}
				return
			}
			data, err := framer.Frame(env)
			if err != nil {
				p.log.Error("result socket could not encode a hub event", "clientId", clientID, "error", err)
				continue
			}
			if !writeText(ctx, c, data) {
				return
			}
		}
	}()
	go func() { // liveness: each pong is activity of the client
		defer wg.Done()
		t := time.NewTicker(ping)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, socketWriteTimeout)
			err := c.Ping(pctx)
			pcancel()
			if err != nil {
				return
			}
			p.hub.Touch(clientID)
		}
	}()
	defer wg.Wait()
	defer cancel()
	var buf bytes.Buffer
	for {
		data, err := readMessage(ctx, c, &buf)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) { // 1009 sent
				p.ClientFrames().FailOversize(clientID, actor, TransportWebSocket, buf.Bytes())
			}
			return // closed by the client, too big, or ctx done
		}
		p.hub.Touch(clientID)
		if r, ok := p.ClientFrames().Handle(clientID, actor, TransportWebSocket, data); ok {
			out, _ := json.Marshal(r)
			if !writeText(ctx, c, out) {
				return
			}
		}
		if buf.Cap() > 1<<20 {
			buf = bytes.Buffer{} // do not keep a screenshot-sized buffer per idle socket
		}
	}
}

// writeText writes one text message; false when the socket is done.
func writeText(ctx context.Context, c *websocket.Conn, data []byte) bool {
	wctx, cancel := context.WithTimeout(ctx, socketWriteTimeout)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, data) == nil
}
