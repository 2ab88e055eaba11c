package eventhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	sse "github.com/tmaxmax/go-sse"
)

// maxHeaderValue bounds client-supplied ids and names.
const maxHeaderValue = 256

// maxPingBody bounds the ping request body.
const maxPingBody = 4 << 10

// maxWriteBatch is how many queued events one flush may carry.
const maxWriteBatch = 64

func validHeaderValue(v string) error {
	if len(v) > maxHeaderValue {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidHeader, maxHeaderValue)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: control character", ErrInvalidHeader)
		}
	}
	return nil
}

// EventsHandler returns the GET /v1/events handler. Mount it behind
// the host app's auth middleware (which sets WithActor) and outside the rate
// limiter's budget (ratelimit.DefaultExempt exempts it by path).
//
// Request: X-Vellum-Client-Id registers the stream as that client, and then
// X-Vellum-Interface-Id is required (400 without); X-Vellum-Machine-Name is
// optional; the actor is ActorFrom(r.Context()), never a header; the
// conversationId query parameter filters conversation events; Last-Event-ID
// replays recorded events after that id which match the new stream.
//
// Responses: 405 for a method other than GET; 400 for a missing interface
// id or a bad header value; 409 when the client id is connected under
// another actor; 503 when the subscriber cap is 0 or the hub is closed;
// otherwise 200 text/event-stream: a heartbeat comment at once and every
// heartbeat interval, then "event: assistant_event / id / data: <Envelope>"
// frames. A reconnect with the same client id closes the older stream. The
// stream ends when the client goes, the hub sheds or replaces it, or Close.
func (h *InProcess) EventsHandler() http.Handler {
	return http.HandlerFunc(h.serveEvents)
}

func (h *InProcess) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "eventhub: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	req := SubscribeRequest{
		ClientID:       r.Header.Get(wire.HeaderClientID),
		InterfaceID:    r.Header.Get(wire.HeaderInterfaceID),
		MachineName:    r.Header.Get(wire.HeaderMachineName),
		ConversationID: r.URL.Query().Get(wire.QueryConversationID),
		LastEventID:    r.Header.Get(wire.HeaderLastEventID),
	}
	req.Actor, _ = ActorFrom(r.Context())
	for _, v := range []string{req.ClientID, req.InterfaceID, req.MachineName, req.ConversationID} {
		if err := validHeaderValue(v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if req.ClientID != "" && req.InterfaceID == "" {
		http.Error(w, "eventhub: "+wire.HeaderInterfaceID+" is required with "+wire.HeaderClientID, http.StatusBadRequest)
		return
	}
	if !req.registered() {
		req.InterfaceID, req.MachineName = "", ""
	}
	s, err := h.subscribe(req)
	switch {
	case errors.Is(err, ErrActorMismatch):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer h.end(s, EndDisconnected, "")

	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	// A shed or replacement may need to unblock this goroutine while it is
	// stuck in a write: moving the deadline to now does that.
	if !s.setWriter(func() { _ = rc.SetWriteDeadline(time.Now()) }) {
		return
	}
	defer s.setWriter(nil)

	sw := streamWriter{h: h, s: s, w: w, rc: rc}
	ticker := h.cfg.clock.NewTicker(h.cfg.heartbeat)
	defer ticker.Stop()
	if !sw.heartbeat() {
		return
	}
	for i := 0; i < len(s.replay); i += maxWriteBatch {
		if !sw.write(s.replay[i:min(i+maxWriteBatch, len(s.replay))]) {
			return
		}
	}
	s.replay = nil

	ctx := r.Context()
	batch := make([]*frame, 0, maxWriteBatch)
	for {
		select {
		case <-s.done:
			// Uninstall the abort first, so no abort can land after the
			// reset below.
			s.setWriter(nil)
			if !s.wasShed() {
				// Ended by the hub (replaced, unregistered, closed): undo a
				// possible abort so the response ends cleanly (EOF, not a
				// cut connection) and the client reconnects normally.
				_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.writeTimeout))
			}
			return
		case <-ctx.Done():
			return
		case <-ticker.C():
			if !sw.heartbeat() {
				return
			}
			h.checkHealth(s)
		case f := <-s.queue:
			batch = append(batch[:0], f)
		drain:
			for len(batch) < maxWriteBatch {
				select {
				case f := <-s.queue:
					batch = append(batch, f)
				default:
					break drain
				}
			}
			if !sw.write(batch) {
				return
			}
			clear(batch)
		}
	}
}

func (r SubscribeRequest) registered() bool { return r.ClientID != "" }

// streamWriter writes frames to one stream under a write deadline.
type streamWriter struct {
	h  *InProcess
	s  *stream
	w  http.ResponseWriter
	rc *http.ResponseController
}

// write sends frames and flushes; on failure it ends the stream and
// reports false.
func (sw *streamWriter) write(frames []*frame) bool {
	err := sw.do(func() error {
		for _, f := range frames {
			if _, err := sw.w.Write(f.data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false
	}
	sw.s.delivered.Add(uint64(len(frames)))
	return true
}

// heartbeat writes a heartbeat comment carrying a fresh token.
func (sw *streamWriter) heartbeat() bool {
	tok := sw.h.heartbeatToken(sw.s)
	msg := &sse.Message{}
	msg.AppendComment(wire.HeartbeatPrefix + tok)
	if err := sw.do(func() error { _, err := msg.WriteTo(sw.w); return err }); err != nil {
		return false
	}
	sw.s.heartbeats.Add(1)
	return true
}

// do runs write and a flush under the write deadline and classifies a
// failure: a timeout sheds the stream (not reading), anything else
// is a disconnect.
func (sw *streamWriter) do(write func() error) error {
	select {
	case <-sw.s.done:
		return ErrClosed
	default:
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.h.cfg.writeTimeout))
	// An abort between the check above and the deadline reset would be
	// undone by the reset: re-check after it.
	select {
	case <-sw.s.done:
		return ErrClosed
	default:
	}
	err := write()
	if err == nil {
		err = sw.rc.Flush()
	}
	if err == nil {
		return nil
	}
	if isTimeout(err) {
		sw.h.end(sw.s, EndReason(ShedWriteTimeout), ShedWriteTimeout)
	} else {
		sw.h.end(sw.s, EndDisconnected, "")
	}
	return err
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// PingRequest is the body of the ping route: the token of a
// heartbeat the client read on its current stream.
type PingRequest struct {
	Heartbeat string `json:"heartbeat"`
}

// DecodePing parses a ping body: a JSON object with a non-empty string
// "heartbeat" of at most 64 bytes; unknown fields are ignored; trailing
// data after the object is an error.
func DecodePing(body []byte) (PingRequest, error) {
	var p PingRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&p); err != nil {
		return PingRequest{}, fmt.Errorf("eventhub: ping body: %w", err)
	}
	if dec.More() {
		return PingRequest{}, errors.New("eventhub: ping body: trailing data")
	}
	if _, err := dec.Token(); err != io.EOF {
		return PingRequest{}, errors.New("eventhub: ping body: trailing data")
	}
	if p.Heartbeat == "" || len(p.Heartbeat) > 64 {
		return PingRequest{}, errors.New("eventhub: ping body: heartbeat token missing or too long")
	}
	return p, nil
}

// PingHandler returns the POST /v1/ping handler. The client names
// itself with X-Vellum-Client-Id and echoes the token of a heartbeat it read
// ({"heartbeat":"<token>"}, the text after "heartbeat " in the comment);
// the token must be one of the two latest heartbeats written on its current
// stream, which proves the client is reading. Success moves LastActive and
// answers 200 {"accepted":true}.
//
// Errors: 405 not POST; 400 missing client header or bad body; 413 body over
// 4 KiB; 404 client not connected; 403 the authenticated actor
// (ActorFrom) is not the client's actor; 409 stale or unknown token.
func (h *InProcess) PingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "eventhub: method not allowed", http.StatusMethodNotAllowed)
			return
		}
		clientID := r.Header.Get(wire.HeaderClientID)
		if clientID == "" {
			http.Error(w, "eventhub: "+wire.HeaderClientID+" is required", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPingBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "eventhub: ping body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "eventhub: read ping body: "+err.Error(), http.StatusBadRequest)
			return
		}
		p, err := DecodePing(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		actor, _ := ActorFrom(r.Context())
		status, msg := h.ping(clientID, actor, p.Heartbeat)
		if status != http.StatusOK {
			http.Error(w, msg, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"accepted":true}`)
	})
}

func (h *InProcess) ping(clientID, actor, token string) (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.clients[clientID]
	switch {
	case s == nil:
		return http.StatusNotFound, ErrNotConnected.Error()
	case s.actor != actor:
		return http.StatusForbidden, ErrActorMismatch.Error()
	case token != s.hbTokens[0] && token != s.hbTokens[1]:
		return http.StatusConflict, "eventhub: stale or unknown heartbeat token"
	}
	h.touchLocked(s)
	return http.StatusOK, ""
}
