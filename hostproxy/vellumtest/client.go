package vellumtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DevOrigin is the Origin of the Vellum extension's dev build, the one its
// repository builds by default.
const DevOrigin = "chrome-extension://kajfcoaefacmjgdaloeafnpcfaeahcio"

// userAgent is the User-Agent of headless Chromium 156, as observed.
const userAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36"

// maxEventQueue bounds the events waiting to be posted; beyond it they are
// dropped and counted (Stats.EventsDropped).
const maxEventQueue = 4096

// Options configures Start. ServerURL is required, and BrowserWSURL unless
// Answer is set.
type Options struct {
	// ServerURL is the gateway, e.g. "http://127.0.0.1:7830"; a trailing /
	// is stripped.
	ServerURL string
	// BrowserWSURL is the browser-level DevTools WebSocket of the Chromium
	// to drive (ws://127.0.0.1:<port>/devtools/browser/<id>).
	BrowserWSURL string
	// Answer, when set, replaces the browser: the client connects to none
	// and every host_browser_request is answered by Answer(ctx, cdpMethod,
	// cdpParams, cdpSessionId) on the request's own goroutine, posted like a
	// browser's answer (a nil result as "{}", an error as its plain text
	// with isError true). For load tests of the server side, where a browser
	// per client would be the bottleneck. It must be safe for concurrent use.
	Answer func(ctx context.Context, method string, params json.RawMessage, cdpSessionID string) (json.RawMessage, error)
	// Origin is sent on every POST; default DevOrigin.
	Origin string
	// ClientID is the X-Vellum-Client-Id; default a random UUID.
	ClientID string
	// ReconnectDelay is the wait before reopening a stream the server
	// closed; default 1 s, as observed.
	ReconnectDelay time.Duration
	// Token, when set, is the bearer token of every request, and the client
	// never pairs (a client paired beforehand, e.g. with a token the test
	// minted for an actor of its own); empty means pairing on every connect,
	// as the extension does.
	Token string
	// ResultSocket sends results over the result socket (GET
	// /v1/host-browser-result/ws: an auth message with the token and client
	// id, then one message per result), as the reference extension of this
	// repository does, instead of one POST each as the Vellum extension
	// does. Start opens it after the stream and fails when it cannot; a
	// result whose socket write fails is POSTed.
	ResultSocket bool
	// HTTPClient sends every request; nil means a client of its own.
	HTTPClient *http.Client
	// Logger receives the client's warnings (a refused result, a lost
	// stream); nil discards.
	Logger *slog.Logger
}

// Stats counts what the client did. Read it with Client.Stats.
type Stats struct {
	Pairings, Subscribes         int
	Requests, Results, Cancelled int
	// SocketResults is how many of Results went over the result socket.
	SocketResults                    int
	ResultsRefused                   map[int]int // status → count
	Events, EventsRefused            int
	EventsDropped                    int
	Invalidations, InvalidationsSent int
}

// Client is a running Vellum-shaped client. Methods are safe for
// concurrent use; Close stops it.
type Client struct {
	o      Options
	http   *http.Client
	log    *slog.Logger
	dbg    *debugger
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// handlers counts the requests being handled (also in wg).
	handlers sync.WaitGroup

	open   atomic.Bool // the stream is open: events are posted only then
	events chan post

	mu        sync.Mutex
	token     string
	stats     Stats
	cancelled map[string]bool
	socket    *resultSocket // Options.ResultSocket, once open
	authStop  string        // the body of a 401/403 on the stream, once it happened
	closeOnce sync.Once
}

type post struct {
	path string
	body []byte
}

// Start connects to the browser, pairs, opens the events stream and returns
// once the server answered the stream 200. ctx bounds only the start. The
// client then serves requests until Close: each on its own goroutine,
// results posted once (never retried), events posted while the stream is
// open, the stream reopened after ReconnectDelay when the server ends it,
// and abandoned for good on 401 or 403 (as the extension does).
func Start(ctx context.Context, o Options) (*Client, error) {
	if o.ServerURL == "" || (o.BrowserWSURL == "" && o.Answer == nil) {
		return nil, errors.New("vellumtest: ServerURL and BrowserWSURL (or Answer) are required")
	}
	o.ServerURL = strings.TrimSuffix(o.ServerURL, "/")
	if o.Origin == "" {
		o.Origin = DevOrigin
	}
	if o.ClientID == "" {
		o.ClientID = newUUID()
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = time.Second
	}
	c := &Client{o: o, http: o.HTTPClient, log: o.Logger, events: make(chan post, maxEventQueue),
		cancelled: make(map[string]bool)}
	c.stats.ResultsRefused = map[int]int{}
	if c.http == nil {
		c.http = &http.Client{Transport: &http.Transport{}}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.dbg = newDebugger(c.forwardEvent, c.tabClosed)
	if o.Answer == nil {
		conn, err := dialCDP(ctx, o.BrowserWSURL, c.dbg.event)
		if err != nil {
			return nil, err
		}
		c.dbg.conn = conn
		if err := c.dbg.start(ctx); err != nil {
			conn.close()
			return nil, err
		}
	}
	var err error
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.postEvents(runCtx) }()
	ready := make(chan error, 1)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.loop(runCtx, ready) }()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && o.ResultSocket {
		var s *resultSocket
		if s, err = c.openSocket(ctx); err == nil {
			c.mu.Lock()
			c.socket = s
			c.mu.Unlock()
			c.wg.Add(1)
			go func() { defer c.wg.Done(); c.readAcks(runCtx, s) }()
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ClientID returns the client's X-Vellum-Client-Id.
func (c *Client) ClientID() string { return c.o.ClientID }

// Stats returns a copy of the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.ResultsRefused = make(map[int]int, len(c.stats.ResultsRefused))
	for k, v := range c.stats.ResultsRefused {
		s.ResultsRefused[k] = v
	}
	return s
}

// ActiveTab returns the id of the tab sessionless commands go to.
func (c *Client) ActiveTab() int {
	c.dbg.mu.Lock()
	defer c.dbg.mu.Unlock()
	return c.dbg.active
}

// TargetID returns the CDP target id of a tab, "" when it is not open.
func (c *Client) TargetID(tabID int) string {
	c.dbg.mu.Lock()
	defer c.dbg.mu.Unlock()
	if t := c.dbg.tabs[tabID]; t != nil {
		return t.targetID
	}
	return ""
}

// Close stops the stream and every goroutine and closes the browser
// connection (the browser keeps running). It first lets the requests being
// handled finish and, with ResultSocket, waits for the server's answers to
// the results already sent on the socket (up to 2 s each), so that Stats
// counts them. Idempotent; returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		// Requests being handled finish first, and the answers to results
		// already sent on the socket arrive, so that Stats counts them.
		c.waitHandlers()
		c.mu.Lock()
		s := c.socket
		c.mu.Unlock()
		if s != nil {
			s.drain()
		}
		if c.cancel != nil {
			c.cancel()
		}
		if s != nil {
			s.conn.CloseNow()
		}
		c.wg.Wait()
		if c.dbg.conn != nil {
			c.dbg.conn.close()
		}
	})
	return nil
}

// waitHandlers waits for the requests being handled, up to closeGrace.
func (c *Client) waitHandlers() {
	done := make(chan struct{})
	go func() { c.handlers.Wait(); close(done) }()
	guard := time.NewTimer(closeGrace)
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
	}
}

// closeGrace bounds each of Close's waits: for the requests being handled,
// and for the answers to results sent on the socket.
const closeGrace = 2 * time.Second

func (c *Client) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// loop pairs and keeps the events stream open.
func (c *Client) loop(ctx context.Context, ready chan<- error) {
	first := true
	for ctx.Err() == nil {
		if c.o.Token != "" {
			c.mu.Lock()
			c.token = c.o.Token
			c.mu.Unlock()
		} else {
			c.pair(ctx) // every connect pairs first; a failure leaves no token
		}
		status, err := c.stream(ctx, func() {
			if first {
				first = false
				ready <- nil
			}
		})
		if ctx.Err() != nil {
			return
		}
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			c.log.Warn("vellumtest: events stream refused; giving up", "status", status)
			if first {
				ready <- fmt.Errorf("vellumtest: events stream refused with %d: %s", status, c.authStop)
			}
			return
		}
		c.log.Info("vellumtest: events stream ended; reconnecting", "status", status, "error", err)
		t := time.NewTimer(c.o.ReconnectDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// setCommon sets the headers every request of the extension carries.
func setCommon(h http.Header) {
	h.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	h.Set("Accept-Language", "en-US,en;q=0.9")
	h.Set("Sec-Fetch-Dest", "empty")
	h.Set("Sec-Fetch-Mode", "cors")
	h.Set("Sec-Fetch-Site", "none")
	h.Set("User-Agent", userAgent)
}

func (c *Client) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// pair posts /v1/pair with an empty JSON body, as the extension does.
func (c *Client) pair(ctx context.Context) {
	c.count(func(s *Stats) { s.Pairings++ })
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.o.ServerURL+"/v1/pair", http.NoBody)
	setCommon(req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Vellum-Interface-Id", "chrome-extension")
	req.Header.Set("Origin", c.o.Origin)
	req.Header.Set("Accept", "*/*")
	req.ContentLength = 0
	token := ""
	resp, err := c.http.Do(req)
	if err == nil {
		var body struct {
			Token string `json:"token"`
		}
		if resp.StatusCode/100 == 2 && json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) == nil {
			token = body.Token
		} else {
			c.log.Warn("vellumtest: pairing refused; connecting without a token", "status", resp.StatusCode)
		}
		resp.Body.Close()
	}
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
}

// stream opens GET /v1/events and reads it until it ends; it returns the
// status of the answer.
func (c *Client) stream(ctx context.Context, opened func()) (int, error) {
	c.count(func(s *Stats) { s.Subscribes++ })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.o.ServerURL+"/v1/events", nil)
	setCommon(req.Header)
	req.Header.Set("Accept", "text/event-stream")
	if tok := c.currentToken(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("X-Vellum-Client-Id", c.o.ClientID)
	req.Header.Set("X-Vellum-Interface-Id", "chrome-extension")
	req.Header.Set("Sec-Fetch-Storage-Access", "active")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.mu.Lock()
		c.authStop = string(b)
		c.mu.Unlock()
		return resp.StatusCode, nil
	}
	c.open.Store(true)
	defer c.open.Store(false)
	opened()
	err = readFrames(resp.Body, func(data string) { c.dispatch(ctx, data) })
	return resp.StatusCode, err
}

// readFrames splits the stream as the extension's hand-written parser
// does: frames end at "\n\n"; a frame starting with ":" is skipped; only
// lines that start with "data: " (with the space) or are exactly "data"
// count, joined with "\n"; event: and id: are ignored.
func readFrames(r io.Reader, onData func(string)) error {
	var buf []byte
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.Index(buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			frame := string(buf[:i])
			buf = buf[i+2:]
			if strings.HasPrefix(frame, ":") {
				continue
			}
			var data []string
			for _, line := range strings.Split(frame, "\n") {
				switch {
				case strings.HasPrefix(line, "data: "):
					data = append(data, line[len("data: "):])
				case line == "data":
					data = append(data, "")
				}
			}
			if len(data) > 0 {
				onData(strings.Join(data, "\n"))
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// request is the part of host_browser_request the extension reads.
type request struct {
	Type           string          `json:"type"`
	RequestID      string          `json:"requestId"`
	ConversationID string          `json:"conversationId"`
	CDPMethod      string          `json:"cdpMethod"`
	CDPParams      json.RawMessage `json:"cdpParams"`
	CDPSessionID   string          `json:"cdpSessionId"`
}

func (c *Client) dispatch(ctx context.Context, data string) {
	var env struct {
		Message *request `json:"message"`
	}
	if json.Unmarshal([]byte(data), &env) != nil || env.Message == nil {
		return // a bare message without the envelope is ignored
	}
	m := *env.Message
	switch m.Type {
	case "host_browser_request":
		c.count(func(s *Stats) { s.Requests++ })
		c.wg.Add(1)
		c.handlers.Add(1)
		go func() { defer c.wg.Done(); defer c.handlers.Done(); c.handle(ctx, m) }()
	case "host_browser_cancel":
		c.mu.Lock()
		c.cancelled[m.RequestID] = true
		c.mu.Unlock()
	}
}

// resultBody is the body of a result post, fields in the extension's order.
type resultBody struct {
	RequestID string `json:"requestId"`
	Content   string `json:"content"`
	IsError   bool   `json:"isError"`
}

func (c *Client) handle(ctx context.Context, m request) {
	params := m.CDPParams
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	var res json.RawMessage
	var err error
	if c.o.Answer != nil {
		res, err = c.o.Answer(ctx, m.CDPMethod, params, m.CDPSessionID)
	} else {
		res, err = c.dbg.run(ctx, m.CDPMethod, params, m.CDPSessionID, c.o.ClientID)
	}
	body := resultBody{RequestID: m.RequestID}
	var f *failure
	switch {
	case errors.As(err, &f):
		body.Content, body.IsError = f.content, true
	case err != nil:
		body.Content, body.IsError = err.Error(), true // plain text, as the extension reports a thrown error
	case len(res) == 0:
		body.Content = "{}"
	default:
		body.Content = string(res)
	}
	c.mu.Lock()
	cancelled := c.cancelled[m.RequestID]
	delete(c.cancelled, m.RequestID)
	c.mu.Unlock()
	if cancelled || ctx.Err() != nil {
		c.count(func(s *Stats) { s.Cancelled++ })
		return
	}
	if c.sendOnSocket(ctx, body) {
		return // counted when the server answers on the socket
	}
	raw, _ := json.Marshal(body)
	status, respBody, err := c.post(ctx, "/v1/host-browser-result", raw, true)
	switch {
	case err != nil:
		c.log.Warn("vellumtest: result post failed", "requestId", m.RequestID, "error", err)
	case status/100 != 2:
		c.log.Warn("vellumtest: result refused; not retried", "requestId", m.RequestID, "status", status)
		c.count(func(s *Stats) { s.ResultsRefused[status]++ })
		if status == http.StatusForbidden && strings.Contains(strings.ToLower(respBody), "submitting actor does not match") {
			c.log.Warn("vellumtest: actor mismatch; the extension re-pairs")
		}
	default:
		c.count(func(s *Stats) { s.Results++ })
	}
}

// post sends one POST with the headers of the extension's fetch: bearer,
// Origin, and the client id on results only.
func (c *Client) post(ctx context.Context, path string, body []byte, withClientID bool) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.o.ServerURL+path, bytes.NewReader(body))
	setCommon(req.Header)
	req.Header.Set("Content-Type", "application/json")
	if tok := c.currentToken(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if withClientID {
		req.Header.Set("X-Vellum-Client-Id", c.o.ClientID)
	}
	req.Header.Set("Origin", c.o.Origin)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, string(b), nil
}

// forwardEvent queues a CDP event of an attached tab; nothing names the tab.
func (c *Client) forwardEvent(method string, params json.RawMessage) {
	if !c.open.Load() {
		return
	}
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	raw, _ := json.Marshal(struct {
		Type   string          `json:"type"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}{"host_browser_event", method, params})
	c.enqueue(post{path: "/v1/host-browser-event", body: raw}, func(s *Stats) { s.Events++ })
}

// tabClosed reports a closed tab: tab_closed for every tab, and
// target_closed as well when the debugger was attached to it.
func (c *Client) tabClosed(tabID int, attached bool) {
	if !c.open.Load() {
		return
	}
	reasons := []string{"tab_closed"}
	if attached {
		reasons = append(reasons, "target_closed")
	}
	for _, r := range reasons {
		raw, _ := json.Marshal(map[string]string{"type": "host_browser_session_invalidated",
			"targetId": strconv.Itoa(tabID), "reason": r, "clientId": c.o.ClientID})
		c.enqueue(post{path: "/v1/host-browser-session-invalidated", body: raw}, func(s *Stats) { s.Invalidations++ })
	}
}

func (c *Client) enqueue(p post, counted func(*Stats)) {
	select {
	case c.events <- p:
		c.count(counted)
	default:
		c.count(func(s *Stats) { s.EventsDropped++ })
	}
}

// postEvents posts queued events in order (fire-and-forget: a refusal is
// only counted).
func (c *Client) postEvents(ctx context.Context) {
	for {
		select {
		case p := <-c.events:
			status, _, err := c.post(ctx, p.path, p.body, false)
			if err != nil || status/100 != 2 {
				c.count(func(s *Stats) { s.EventsRefused++ })
			} else if strings.HasSuffix(p.path, "invalidated") {
				c.count(func(s *Stats) { s.InvalidationsSent++ })
			}
		case <-ctx.Done():
			return
		}
	}
}

// newUUID returns a random version-4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
