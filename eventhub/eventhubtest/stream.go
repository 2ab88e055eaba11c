package eventhubtest

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
)

// DialOptions describe a test stream. Every field is optional.
type DialOptions struct {
	ClientID       string
	InterfaceID    string
	MachineName    string
	ConversationID string
	LastEventID    string
	// Header holds extra request headers (an Authorization header, or the
	// test actor header of ActorFromHeader).
	Header http.Header
	// ReadBuffer, when > 0, sets the client socket's receive buffer so that
	// a stream that is not read stalls the server after little data.
	ReadBuffer int
	// MaxFrameSize is passed to eventhub.ReadFrames.
	MaxFrameSize int
}

// StatusError is returned by Dial for a non-200 answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("eventhubtest: status %d: %s", e.Code, strings.TrimSpace(e.Body))
}

// Stream is a client of the hub's SSE endpoint for tests and tools. It reads
// only when Next is called, so a test can stop reading to stall the server.
// Next and its variants must not be called concurrently; Close may be
// called at any time.
type Stream struct {
	resp      *http.Response
	cancel    context.CancelFunc
	transport *http.Transport
	next      func() (eventhub.Frame, error, bool)
	stop      func()
	closeOnce sync.Once
	mu        sync.Mutex // held while next runs
	// LastEventID is the last event id read, for a reconnect.
	LastEventID string
	// LastHeartbeat is the token of the last heartbeat read.
	LastHeartbeat string
}

// Dial opens a stream to eventsURL (the full URL of the events route). ctx
// bounds the dial and the response headers only; the stream lives until
// Close or a cancelled Next. A non-200 answer is a *StatusError.
func Dial(ctx context.Context, eventsURL string, o DialOptions) (*Stream, error) {
	u := eventsURL
	if o.ConversationID != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + wire.QueryConversationID + "=" + o.ConversationID
	}
	streamCtx, cancel := context.WithCancel(context.Background())
	stopDial := context.AfterFunc(ctx, cancel)
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	for k, vs := range o.Header {
		req.Header[k] = vs
	}
	setIf := func(k, v string) {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	setIf(wire.HeaderClientID, o.ClientID)
	setIf(wire.HeaderInterfaceID, o.InterfaceID)
	setIf(wire.HeaderMachineName, o.MachineName)
	setIf(wire.HeaderLastEventID, o.LastEventID)
	req.Header.Set("Accept", "text/event-stream")

	dialer := &net.Dialer{}
	dial := dialer.DialContext
	if o.ReadBuffer > 0 {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(o.ReadBuffer)
			}
			return c, err
		}
	}
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	stopDial()
	if err != nil {
		cancel()
		tr.CloseIdleConnections()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		tr.CloseIdleConnections()
		return nil, &StatusError{Code: resp.StatusCode, Body: string(b)}
	}
	s := &Stream{resp: resp, cancel: cancel, transport: tr}
	s.next, s.stop = iter.Pull2(eventhub.ReadFrames(resp.Body, o.MaxFrameSize))
	return s, nil
}

// Response returns the HTTP response (headers) of the stream.
func (s *Stream) Response() *http.Response { return s.resp }

// Next returns the next frame (event or comment). io.EOF means the server
// ended the stream. Cancelling ctx while Next waits closes the stream.
func (s *Stream) Next(ctx context.Context) (eventhub.Frame, error) {
	stop := context.AfterFunc(ctx, s.cancel)
	s.mu.Lock()
	f, err, ok := s.next()
	s.mu.Unlock()
	stop()
	if !ok {
		if ctx.Err() != nil {
			return eventhub.Frame{}, ctx.Err()
		}
		return eventhub.Frame{}, io.EOF
	}
	if err != nil {
		if ctx.Err() != nil {
			return eventhub.Frame{}, ctx.Err()
		}
		return eventhub.Frame{}, err
	}
	if tok, ok := f.HeartbeatToken(); ok {
		s.LastHeartbeat = tok
	}
	if !f.IsComment && f.LastEventID != "" {
		s.LastEventID = f.LastEventID
	}
	return f, nil
}

// NextEvent returns the next event and its decoded envelope, skipping
// comments.
func (s *Stream) NextEvent(ctx context.Context) (eventhub.Envelope, error) {
	for {
		f, err := s.Next(ctx)
		if err != nil {
			return eventhub.Envelope{}, err
		}
		if f.IsComment {
			continue
		}
		return f.Envelope()
	}
}

// NextHeartbeat returns the token of the next heartbeat comment. Events read
// on the way are returned in skipped.
func (s *Stream) NextHeartbeat(ctx context.Context) (token string, skipped []eventhub.Frame, err error) {
	for {
		f, err := s.Next(ctx)
		if err != nil {
			return "", skipped, err
		}
		if tok, ok := f.HeartbeatToken(); ok {
			return tok, skipped, nil
		}
		skipped = append(skipped, f)
	}
}

// Close ends the stream and releases its connection. Idempotent.
func (s *Stream) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.resp.Body.Close() // unblocks a Next in progress
		s.mu.Lock()
		s.stop()
		s.mu.Unlock()
		s.transport.CloseIdleConnections()
	})
}

// Ping posts a heartbeat acknowledgement to pingURL (eventhub.PingHandler)
// and returns the status code. header carries auth (or the test actor).
func Ping(ctx context.Context, pingURL, clientID, token string, header http.Header) (int, error) {
	body := strings.NewReader(`{"heartbeat":"` + token + `"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pingURL, body)
	if err != nil {
		return 0, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set(wire.HeaderClientID, clientID)
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestActorHeader is read by ActorFromHeader.
const TestActorHeader = "X-Test-Actor"

// ActorFromHeader is a TEST-ONLY auth middleware: it trusts the
// X-Test-Actor request header as the authenticated actor. Never mount it in
// a real server — the actor must come from verified credentials.
func ActorFromHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get(TestActorHeader); a != "" {
			r = r.WithContext(eventhub.WithActor(r.Context(), a))
		}
		next.ServeHTTP(w, r)
	})
}

// ActorHeader returns a header naming actor for ActorFromHeader.
func ActorHeader(actor string) http.Header {
	return http.Header{TestActorHeader: {actor}}
}

// Server is a hub served over real HTTP on 127.0.0.1 with the events and
// ping routes behind ActorFromHeader.
type Server struct {
	*httptest.Server
	Hub *eventhub.InProcess
}

// EventsURL and PingURL are the full route URLs.
func (s *Server) EventsURL() string { return s.URL + wire.PathEvents }
func (s *Server) PingURL() string   { return s.URL + wire.PathPing }

// StartServer serves hub on a loopback httptest server (127.0.0.1) with
// the events and ping routes behind ActorFromHeader. extra, if non-nil, may
// add routes to the mux before the server starts. Close the result.
func StartServer(hub *eventhub.InProcess, extra func(*http.ServeMux)) *Server {
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, hub.EventsHandler())
	mux.Handle(wire.PathPing, hub.PingHandler())
	if extra != nil {
		extra(mux)
	}
	return &Server{Server: httptest.NewServer(ActorFromHeader(mux)), Hub: hub}
}

// Close closes the hub first (ending every stream, so no handler is left
// streaming) and then the server. Idempotent.
func (s *Server) Close() {
	_ = s.Hub.Close()
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// NewServer is StartServer with Close registered on tb.Cleanup.
func NewServer(tb testing.TB, hub *eventhub.InProcess, extra func(*http.ServeMux)) *Server {
	tb.Helper()
	s := StartServer(hub, extra)
	tb.Cleanup(s.Close)
	return s
}
