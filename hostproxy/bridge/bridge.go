package bridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// Defaults of Options.
const (
	DefaultInterfaceID  = wire.InterfaceMacOS
	DefaultMinBackoff   = 250 * time.Millisecond
	DefaultMaxBackoff   = 15 * time.Second
	DefaultIdleTimeout  = 30 * time.Second
	DefaultMaxFrameSize = 16 << 20
	DefaultMaxInFlight  = 512
	// DefaultMaxConversations bounds Options.MaxConversations.
	DefaultMaxConversations = 64
	// DefaultCommandTimeout applies to a request without timeout_seconds.
	DefaultCommandTimeout = hostproxy.DefaultTimeout
	// postTimeout bounds one result, event or ping POST.
	postTimeout = 30 * time.Second
	// A result refused for the moment (429, 503) is posted again for up to
	// resultRetryFor, the waits between the posts growing from
	// resultRetryMin to resultRetryMax (see Bridge.postResult).
	resultRetryFor = 30 * time.Second
	resultRetryMin = 25 * time.Millisecond
	resultRetryMax = 2 * time.Second
	// seenRequests bounds the memory of executed request ids (a replay after
	// a reconnect must not run a command twice).
	seenRequests = 4096
)

// Browser is what the bridge drives: a CDP connection to the local Chrome
// (a *cdpinspect.Backend by default). Commands without a session id run on
// the attached page.
type Browser interface {
	browserbackend.ScopedClient
	browserbackend.EventSource
}

// Dialer opens a Browser. The bridge calls it lazily, on the first request
// and again after the browser connection is lost.
type Dialer func(ctx context.Context) (Browser, error)

// ConversationDialer opens a Browser working in one conversation's own tab.
// The bridge calls it on a conversation's first request, and again after
// that connection is lost or was released to stay within
// Options.MaxConversations; each call must attach to the same tab as long
// as it exists.
type ConversationDialer func(ctx context.Context, conversationID string) (Browser, error)

// CDPInspectTabs gives every conversation its own tab of the local Chrome
// exactly as the cdp-inspect backend does, through p
// (cdpinspect.Provider.DialConversation): the conversation's remembered
// target, else a tab of the agent's own, never a tab another conversation
// works in; a tab the user closed fails that conversation's call with
// target_not_found and the next call opens a new one. Close the tabs with
// p.ReleaseConversation.
func CDPInspectTabs(p *cdpinspect.Provider) ConversationDialer {
	return func(ctx context.Context, conversationID string) (Browser, error) {
		b, err := p.DialConversation(ctx, conversationID, browserbackend.TabRequest{})
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

// CDPInspectDialer discovers and attaches to a local Chrome as cdp-inspect
// does: cfg gives host:port and the probe timeout, opts may
// add an explicit WebSocket URL or user-data directories.
func CDPInspectDialer(cfg cdpinspect.Config, opts ...cdpinspect.Option) Dialer {
	return func(ctx context.Context) (Browser, error) {
		b, err := cdpinspect.Dial(ctx, cfg, opts...)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

// Options configures a Bridge. ServerURL and Dial are required; other zero
// fields take the defaults above.
type Options struct {
	// ServerURL is the assistant runtime's base URL, e.g.
	// http://127.0.0.1:7830; the bridge uses /v1/events, /v1/ping and the
	// host-browser routes under it.
	ServerURL string
	// Token, when set, is sent as "Authorization: Bearer <token>". It is
	// never logged.
	Token string
	// InterfaceID is sent as X-Vellum-Interface-Id (default "macos").
	InterfaceID string
	// ClientID is sent as X-Vellum-Client-Id (default "bridge-<random>").
	ClientID string
	// MachineName, optional, is sent as X-Vellum-Machine-Name (default the
	// host name).
	MachineName string
	// Dial opens the local browser.
	Dial Dialer
	// DialConversation, optional, gives each conversation its own tab: a
	// request with a conversationId runs on the Browser it returns for
	// that conversation (one CDP connection each, see CDPInspectTabs);
	// requests without one use Dial. Nil: every request uses Dial.
	DialConversation ConversationDialer
	// MaxConversations bounds the conversations' open connections
	// (DialConversation); beyond it the least recently used one is closed
	// (its tab stays open and its next request dials again). Default 64.
	MaxConversations int
	// HTTPClient carries every request; nil means a client on a clone of
	// http.DefaultTransport with enough idle connections for concurrent
	// result posts. It must not have a Timeout (the event stream is long).
	HTTPClient *http.Client
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the jittered exponential reconnect
	// delay.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout: when nothing, not even a heartbeat, arrives on the stream
	// for this long, the bridge reconnects.
	IdleTimeout time.Duration
	// MaxFrameSize bounds one SSE line or event (bytes).
	MaxFrameSize int
	// MaxInFlight bounds concurrently executing requests; more are answered
	// at once with a transport_error, at most MaxInFlight such answers being
	// posted at a time; beyond that a request is dropped unanswered
	// (OutcomeDropped) and the server's timeout ends it. Default 512.
	MaxInFlight int
	// Hooks, optional, observe the bridge.
	Hooks Hooks
}

// Request outcomes reported to Hooks.RequestDone.
const (
	// OutcomePosted: the result (or error) was posted.
	OutcomePosted = "posted"
	// OutcomeCancelled: the server cancelled the request; nothing was posted.
	OutcomeCancelled = "cancelled"
	// OutcomeShutdown: Run ended first; nothing was posted.
	OutcomeShutdown = "shutdown"
	// OutcomeDropped: the request was not executed because MaxInFlight
	// requests were running and MaxInFlight refusals were still being
	// posted; nothing was posted (the server's timeout ends the request).
	OutcomeDropped = "dropped"
)

// Hooks are optional callbacks for metrics and tests. They run on the
// bridge's goroutines and must not block.
type Hooks struct {
	// Connected is called when an events stream opens.
	Connected func()
	// RequestDone is called once per executed request with its outcome
	// (OutcomePosted, OutcomeCancelled, OutcomeShutdown) and, for posted
	// ones, whether the content was an error; and once per dropped request
	// (OutcomeDropped, see MaxInFlight).
	RequestDone func(requestID, method, outcome string, isError bool)
}

// Bridge is the reference desktop bridge: it subscribes to the hub as
// a desktop client, runs each host_browser_request against the local Chrome,
// posts the result, forwards CDP events, honours cancels and reconnects.
// Create it with New and call Run once.
type Bridge struct {
	o      Options
	log    *slog.Logger
	client *http.Client
	base   *url.URL

	lastEventID atomic.Pointer[string]
	pinging     atomic.Bool

	mu       sync.Mutex
	inflight map[string]*inflight
	refusing chan struct{} // one token per refusal being posted (MaxInFlight)
	seen     map[string]struct{}
	seenRing []string
	seenNext int

	bmu      sync.Mutex              // serialises dialling
	browsers map[string]*liveBrowser // by conversation ("" for Dial's)
	uses     uint64                  // clock of liveBrowser.used

	wg sync.WaitGroup // request handlers and event forwarders
}

type inflight struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool
}

type liveBrowser struct {
	b    Browser
	key  string // its conversation, "" for Dial's
	used uint64 // Bridge.uses at its last request, under bmu
	dead atomic.Bool
	// pageGone is set when the page a browser of Dial's worked in went
	// away (its session detached); told once its next request was failed
	// for it (see connect).
	pageGone, told atomic.Bool
	stop           func()
	// endPosts cancels the context the event forwarder posts with, so a
	// release (drop or shutdown) never waits on a server that stopped
	// answering.
	endPosts context.CancelFunc
}

// New validates opts and returns a Bridge.
func New(opts Options) (*Bridge, error) {
	if opts.ServerURL == "" {
		return nil, errors.New("bridge: ServerURL is required")
	}
	base, err := url.Parse(strings.TrimRight(opts.ServerURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("bridge: ServerURL %q is not an http(s) URL", opts.ServerURL)
	}
	if opts.Dial == nil {
		return nil, errors.New("bridge: Dial is required")
	}
	if opts.InterfaceID == "" {
		opts.InterfaceID = DefaultInterfaceID
	}
	if opts.ClientID == "" {
		var r [8]byte
		_, _ = rand.Read(r[:])
		opts.ClientID = "bridge-" + hex.EncodeToString(r[:])
	}
	if opts.MachineName == "" {
		opts.MachineName, _ = os.Hostname()
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxFrameSize <= 0 {
		opts.MaxFrameSize = DefaultMaxFrameSize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxConversations <= 0 {
		opts.MaxConversations = DefaultMaxConversations
	}
	b := &Bridge{o: opts, base: base, inflight: map[string]*inflight{}, seen: map[string]struct{}{},
		browsers: map[string]*liveBrowser{},
		seenRing: make([]string, seenRequests), refusing: make(chan struct{}, opts.MaxInFlight)}
	b.log = opts.Logger
	if b.log == nil {
		b.log = slog.Default()
	}
	b.log = b.log.With("module", "bridge", "clientId", opts.ClientID)
	b.client = opts.HTTPClient
	if b.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 128
		b.client = &http.Client{Transport: tr}
	}
	return b, nil
}

// ClientID returns the client id the bridge subscribes with.
func (b *Bridge) ClientID() string { return b.o.ClientID }

// statusError is a non-200 answer to GET /v1/events.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("bridge: events stream answered %d: %s", e.code, e.body)
}

// permanent reports whether retrying cannot help (bad request, auth).
func (e *statusError) permanent() bool {
	return e.code == http.StatusBadRequest || e.code == http.StatusUnauthorized ||
		e.code == http.StatusForbidden || e.code == http.StatusNotFound || e.code == http.StatusConflict
}

// Run subscribes and serves until ctx is done (then it returns ctx's error)
// or the server refuses the subscription for good (400, 401, 403, 404, 409:
// a *statusError). Lost streams are reopened with jittered exponential
// backoff between MinBackoff and MaxBackoff, sending Last-Event-ID so
// requests published during the gap are replayed. On return every request
// goroutine has finished and the browser connection is closed.
func (b *Bridge) Run(ctx context.Context) error {
	defer b.shutdown()
	attempt := 0
	for {
		start := time.Now()
		err := b.stream(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *statusError
		if errors.As(err, &se) && se.permanent() {
			b.log.Error("events subscription refused", "status", se.code, "error", err)
			return err
		}
		if time.Since(start) > b.o.MaxBackoff {
			attempt = 0 // the stream was up for a while: start over
		}
		delay := backoff(attempt, b.o.MinBackoff, b.o.MaxBackoff)
		attempt++
		b.log.Warn("events stream lost, reconnecting", "error", err, "attempt", attempt, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// backoff returns the delay before reconnect attempt n (0-based): min·2ⁿ
// capped at max, then jittered down by up to half ("equal jitter": half
// fixed, half random), so reconnecting clients spread out.
func backoff(n int, minD, maxD time.Duration) time.Duration {
	d := minD
	for i := 0; i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	half := d / 2
	return half + time.Duration(mrand.Int64N(int64(half)+1))
}

func (b *Bridge) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base.String()+path, rd)
	if err != nil {
		return nil, err
	}
	if b.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+b.o.Token)
	}
	req.Header.Set(wire.HeaderClientID, b.o.ClientID)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// errIdle ends a stream on which nothing arrived for IdleTimeout.
var errIdle = errors.New("bridge: stream idle, no heartbeat")

// stream runs one subscription until it ends.
func (b *Bridge) stream(runCtx context.Context) error {
	ctx, cancel := context.WithCancelCause(runCtx)
	defer cancel(nil)
	req, err := b.newRequest(ctx, http.MethodGet, wire.PathEvents, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(wire.HeaderInterfaceID, b.o.InterfaceID)
	if b.o.MachineName != "" {
		req.Header.Set(wire.HeaderMachineName, b.o.MachineName)
	}
	if id := b.lastEventID.Load(); id != nil && *id != "" {
		req.Header.Set(wire.HeaderLastEventID, *id)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("bridge: connect: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &statusError{code: resp.StatusCode, body: strings.TrimSpace(string(msg))}
	}
	b.log.Info("events stream connected", "interfaceId", b.o.InterfaceID)
	if b.o.Hooks.Connected != nil {
		b.o.Hooks.Connected()
	}

	// Reconnect when the stream goes quiet: the hub sends a heartbeat every
	// few seconds, so silence means a dead or half-open connection.
	idle := time.AfterFunc(b.o.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	body := &activityReader{r: resp.Body, onRead: func() { idle.Reset(b.o.IdleTimeout) }}

	for f, err := range eventhub.ReadFrames(body, b.o.MaxFrameSize) {
		if err != nil {
			if errors.Is(context.Cause(ctx), errIdle) {
				return errIdle
			}
			return fmt.Errorf("bridge: read stream: %w", err)
		}
		if tok, ok := f.HeartbeatToken(); ok {
			b.ping(ctx, tok)
			continue
		}
		if f.IsComment {
			continue
		}
		if f.LastEventID != "" {
			id := f.LastEventID
			b.lastEventID.Store(&id)
		}
		m, err := DecodeFrame([]byte(f.Data))
		if err != nil {
			b.log.Warn("ignoring malformed frame", "error", err)
			continue
		}
		switch {
		case m.Request != nil:
			b.start(runCtx, m)
		case m.Cancel != nil:
			b.cancel(m.Cancel.RequestID)
		}
	}
	if errors.Is(context.Cause(ctx), errIdle) {
		return errIdle
	}
	return errors.New("bridge: stream ended")
}

type activityReader struct {
	r      io.Reader
	onRead func()
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.onRead()
	}
	return n, err
}

// ping echoes a heartbeat token so the hub sees the bridge reading;
// at most one ping is in flight.
func (b *Bridge) ping(ctx context.Context, token string) {
	if !b.pinging.CompareAndSwap(false, true) {
		return
	}
	body, _ := json.Marshal(eventhub.PingRequest{Heartbeat: token})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer b.pinging.Store(false)
		if status, err := b.post(ctx, wire.PathPing, body); err != nil || status != http.StatusOK {
			b.log.Debug("ping not accepted", "status", status, "error", err)
		}
	}()
}

// markSeen records id and reports whether it was new.
func (b *Bridge) markSeen(id string) bool {
	if _, dup := b.seen[id]; dup {
		return false
	}
	if old := b.seenRing[b.seenNext]; old != "" {
		delete(b.seen, old)
	}
	b.seenRing[b.seenNext] = id
	b.seenNext = (b.seenNext + 1) % len(b.seenRing)
	b.seen[id] = struct{}{}
	return true
}

// start runs one request on its own goroutine. The command's context derives
// from Run's, so it outlives a stream reconnect but not Run.
func (b *Bridge) start(runCtx context.Context, m Message) {
	r := m.Request
	timeout := m.Timeout()
	if timeout == 0 {
		timeout = DefaultCommandTimeout
	}
	b.mu.Lock()
	if !b.markSeen(r.RequestID) {
		b.mu.Unlock()
		b.log.Debug("ignoring a request already seen", "requestId", r.RequestID)
		return
	}
	if len(b.inflight) >= b.o.MaxInFlight {
		b.mu.Unlock()
		// Refusals are bounded too: a flood must not cost one goroutine
		// and one connection per request.
		select {
		case b.refusing <- struct{}{}:
		default:
			b.log.Warn("too many requests in flight; dropping a request unanswered", "requestId", r.RequestID, "method", r.CDPMethod)
			if b.o.Hooks.RequestDone != nil {
				b.o.Hooks.RequestDone(r.RequestID, r.CDPMethod, OutcomeDropped, false)
			}
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() { <-b.refusing }()
			b.postResult(runCtx, r.RequestID, errorContent(browserbackend.CodeTransportError, "bridge: too many requests in flight"), true)
		}()
		return
	}
	ctx, cancel := context.WithTimeout(runCtx, timeout)
	in := &inflight{cancel: cancel}
	b.inflight[r.RequestID] = in
	b.mu.Unlock()

	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		content, isErr := b.execute(ctx, r)
		b.mu.Lock()
		delete(b.inflight, r.RequestID)
		b.mu.Unlock()
		outcome := OutcomePosted
		switch {
		case in.cancelled.Load() && runCtx.Err() == nil:
			outcome = OutcomeCancelled
			b.log.Debug("request cancelled, no result posted", "requestId", r.RequestID, "method", r.CDPMethod)
		case runCtx.Err() != nil:
			outcome = OutcomeShutdown // the server sees the stream end
		default:
			b.postResult(runCtx, r.RequestID, content, isErr)
		}
		if b.o.Hooks.RequestDone != nil {
			b.o.Hooks.RequestDone(r.RequestID, r.CDPMethod, outcome, isErr)
		}
	}()
}

// cancel stops a request; its result will not be posted.
func (b *Bridge) cancel(id string) {
	b.mu.Lock()
	in := b.inflight[id]
	b.mu.Unlock()
	if in == nil {
		return
	}
	in.cancelled.Store(true)
	in.cancel()
	b.log.Debug("request cancelled by the server", "requestId", id)
}

// execute runs one command and returns the result content.
func (b *Bridge) execute(ctx context.Context, r *hostproxy.RequestMessage) (string, bool) {
	if wire.IsPseudoMethod(r.CDPMethod) {
		return errorContent(browserbackend.CodeExtensionRequired,
			r.CDPMethod+" is implemented only by the chrome extension, not by the desktop bridge"), true
	}
	lb, err := b.connect(ctx, r.ConversationID, r.CDPMethod)
	if err != nil {
		return ErrorContentFor(err), true
	}
	res, err := lb.b.Send(ctx, browserbackend.Command{Method: r.CDPMethod, Params: r.CDPParams, SessionID: r.CDPSessionID})
	var e *browserbackend.Error
	if err != nil && errors.As(err, &e) && e.Class == browserbackend.ClassTransport && r.CDPSessionID == "" {
		// The page or the socket went away: dial afresh next time.
		if e.Code == browserbackend.CodeSessionNotFound && lb.key == "" && !connLost(lb.b) {
			lb.pageGone.Store(true)
			if !lb.told.Swap(true) {
				ge := lb.pageGoneErr(r.CDPMethod)
				ge.Dispatched = e.Dispatched
				err = ge
			}
		}
		b.drop(lb)
		if e.Code == browserbackend.CodeSessionNotFound && lb.key != "" {
			// The conversation's own tab's session went away, before the
			// command was sent or under it (a late detach):
			// dialling again says what became of the tab (one the user
			// closed is target_not_found, no failover), whichever of the
			// detach and this command came first.
			if _, err := b.connect(ctx, r.ConversationID, r.CDPMethod); err != nil {
				return ErrorContentFor(err), true
			}
		}
	}
	if err != nil {
		return ErrorContentFor(err), true
	}
	if len(res) == 0 {
		return `{}`, false
	}
	// The backend's answer is this call's own and is only read from here
	// on (posted, then dropped): the content shares its bytes rather than
	// copying a screenshot-sized result once more.
	return unsafe.String(unsafe.SliceData(res), len(res)), false
}

// connect returns the live browser of conversation (of Dial when
// DialConversation is nil or conversation is ""), dialling it when needed;
// method is the request's, named by an error about the page it was for.
func (b *Bridge) connect(ctx context.Context, conversation, method string) (*liveBrowser, error) {
	if b.o.DialConversation == nil {
		conversation = ""
	}
	b.bmu.Lock()
	defer b.bmu.Unlock()
	b.uses++
	if lb := b.browsers[conversation]; lb != nil && !lb.dead.Load() {
		lb.used = b.uses
		return lb, nil
	}
	if old := b.browsers[conversation]; old != nil {
		delete(b.browsers, conversation)
		old.release()
		if conversation == "" && old.pageGone.Load() && !old.told.Swap(true) {
			// Dial would attach to whichever page is first now: this
			// request, written for the page that went away, must not run
			// there as if nothing had happened.
			return nil, old.pageGoneErr(method)
		}
	}
	var br Browser
	var err error
	if conversation == "" {
		br, err = b.o.Dial(ctx)
	} else {
		br, err = b.o.DialConversation(ctx, conversation)
	}
	if err != nil {
		b.log.Warn("local browser unavailable", "conversationId", conversation, "error", err)
		return nil, err
	}
	postCtx, endPosts := context.WithCancel(context.Background())
	lb := &liveBrowser{b: br, key: conversation, used: b.uses, endPosts: endPosts}
	events, stop := br.Subscribe("")
	lb.stop = stop
	b.browsers[conversation] = lb
	b.wg.Add(1)
	go b.forward(postCtx, lb, events)
	b.log.Info("local browser attached", "conversationId", conversation)
	if len(b.browsers) > b.o.MaxConversations {
		var lru *liveBrowser
		for _, c := range b.browsers {
			if c != lb && (lru == nil || c.used < lru.used) {
				lru = c
			}
		}
		delete(b.browsers, lru.key)
		lru.release() // a request still running on it fails as transport_error
	}
	return lb, nil
}

// pageGoneErr is the error of a request for the page a browser of Dial's
// worked in after that page went away (the user closed the tab, or
// something detached the bridge from it): ClassProtocol, code
// target_not_found, so the selector does not fail over and the agent
// learns that its page is gone; the request after it attaches to the
// browser's first page again.
func (lb *liveBrowser) pageGoneErr(method string) *browserbackend.Error {
	target := ""
	if pt, ok := lb.b.(pageTarget); ok {
		target = " (target " + pt.TargetID() + ")"
	}
	return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeTargetNotFound,
		Method: method, Backend: browserbackend.KindHostBridge,
		Message: "the page the bridge worked in went away" + target + "; the next call attaches to the browser's first page"}
}

// drop closes lb if it is still its conversation's browser.
func (b *Bridge) drop(lb *liveBrowser) {
	b.bmu.Lock()
	if b.browsers[lb.key] == lb {
		delete(b.browsers, lb.key)
	}
	b.bmu.Unlock()
	lb.release()
}

// release closes the browser connection (idempotent: Close and the
// subscription's cancel are).
func (lb *liveBrowser) release() {
	lb.dead.Store(true)
	lb.endPosts()
	lb.stop()
	_ = lb.b.Close()
}

// pageSession is implemented by browsers that attach to one page (as
// cdpinspect does); events of that session are forwarded with the page's
// CDP target id as their sessionId when the browser tells it (pageTarget),
// else without one, so the server routes them to the conversation working
// in that tab.
type pageSession interface{ SessionID() string }

type pageTarget interface{ TargetID() string }

// connLost reports whether br's browser connection has ended, for a
// Browser that can tell (cdpinspect.Backend.Lost); false otherwise.
func connLost(br Browser) bool {
	l, ok := br.(interface{ Lost() bool })
	return ok && l.Lost()
}

// forward posts the browser's CDP events in order until the subscription
// closes (the browser connection ended or was dropped). Posts use ctx, which
// release cancels: the events still buffered then are dropped at once.
func (b *Bridge) forward(ctx context.Context, lb *liveBrowser, events <-chan browserbackend.Event) {
	defer b.wg.Done()
	page, target := "", ""
	if ps, ok := lb.b.(pageSession); ok {
		page = ps.SessionID()
	}
	if pt, ok := lb.b.(pageTarget); ok {
		target = pt.TargetID()
	}
	for ev := range events {
		if ctx.Err() != nil {
			continue // released: drain without posting
		}
		if ev.Method == browserbackend.MethodTargetDetached {
			if ev.SessionID == page || ev.SessionID == "" {
				// The attached page is gone: the next request says so
				// (Dial's browser, see connect) or re-dials. A browser
				// connection that ended (the browser quit or was killed)
				// detaches its page too: the next request re-dials, as
				// after any transport failure.
				if !connLost(lb.b) {
					lb.pageGone.Store(true)
				}
				lb.dead.Store(true)
				continue
			}
			var p struct {
				TargetID string `json:"targetId"`
			}
			_ = json.Unmarshal(ev.Params, &p)
			body, _ := json.Marshal(hostproxy.InvalidationBody{SessionID: ev.SessionID, TargetID: p.TargetID, Reason: "target_detached"})
			b.postQuiet(ctx, wire.PathHostBrowserSessionInvalidated, body)
			continue
		}
		sid := ev.SessionID
		if sid == page || (sid == "" && target != "") {
			// The browser (root) session's events go with the page's: the
			// connection serves this page alone, and an auto-attach it
			// turned on (browserbackend.BrowserSessionID) reports the
			// targets it holds there (Target.attachedToTarget).
			sid = target
		}
		body, _ := json.Marshal(hostproxy.EventBody{Method: ev.Method, Params: ev.Params, SessionID: sid})
		b.postQuiet(ctx, wire.PathHostBrowserEvent, body)
	}
	lb.dead.Store(true)
}

func (b *Bridge) postQuiet(ctx context.Context, path string, body []byte) {
	if status, err := b.post(ctx, path, body); err != nil || status != http.StatusOK {
		b.log.Debug("post not accepted", "path", path, "status", status, "error", err)
	}
}

// postResult posts one request's result. A result refused for the moment
// (429 from a rate limiter, 503 from a server or proxy that is busy) is
// posted again — after Retry-After when the answer gives one (capped at
// resultRetryMax), else after a jittered backoff from resultRetryMin — until
// it is taken, refused otherwise, or resultRetryFor has passed: dropping it
// would leave the caller waiting for its deadline.
func (b *Bridge) postResult(ctx context.Context, id, content string, isErr bool) {
	// Streamed: a screenshot's content is escaped into the connection, not
	// into a second full-size buffer first.
	body := func() io.Reader { return newResultBody(id, content, isErr) }
	n := newResultBody(id, content, isErr).Len()
	status, retryAfter, err := b.postResponse(ctx, wire.PathHostBrowserResult, body, n)
	give := time.Now().Add(resultRetryFor)
	for attempt := 0; err == nil && retryable(status) && time.Now().Before(give); attempt++ {
		wait := backoff(attempt, resultRetryMin, resultRetryMax)
		if retryAfter >= 0 {
			wait = min(retryAfter, resultRetryMax)
		}
		b.log.Debug("result refused for now; posting it again", "requestId", id, "status", status, "after", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			b.log.Warn("result not posted: the bridge is stopping", "requestId", id, "status", status)
			return
		case <-t.C:
		}
		status, retryAfter, err = b.postResponse(ctx, wire.PathHostBrowserResult, body, n)
	}
	switch {
	case err != nil:
		b.log.Warn("posting result failed", "requestId", id, "error", err)
	case status == http.StatusNotFound:
		b.log.Debug("result no longer wanted (timed out or cancelled on the server)", "requestId", id)
	case status == http.StatusRequestEntityTooLarge && !isErr:
		// Tell the caller at once that the answer is lost.
		b.log.Warn("result refused as too large; reporting payload_too_large", "requestId", id, "bytes", len(content))
		b.postResult(ctx, id, errorContent(browserbackend.CodePayloadTooLarge, "the result exceeded the server's body limit"), true)
	case status != http.StatusOK:
		b.log.Warn("result refused", "requestId", id, "status", status)
	}
}

// retryable reports whether a result refused with status may be taken
// later: a rate limiter's 429 or a busy server's 503.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// post sends one JSON body and returns the status code.
func (b *Bridge) post(ctx context.Context, path string, body []byte) (int, error) {
	status, _, err := b.postResponse(ctx, path, func() io.Reader { return bytes.NewReader(body) }, int64(len(body)))
	return status, err
}

// postResponse sends a JSON body of length n, read from a reader body makes
// (again when the transport retries a request it could not send), and
// returns the status code and the answer's Retry-After, given in whole
// seconds (negative when absent or not a number of seconds).
func (b *Bridge) postResponse(ctx context.Context, path string, body func() io.Reader, n int64) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	req, err := b.newRequest(ctx, http.MethodPost, path, []byte{})
	if err != nil {
		return 0, -1, err
	}
	req.Body, req.ContentLength = io.NopCloser(body()), n
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, -1, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	retryAfter := time.Duration(-1)
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}

// shutdown cancels in-flight requests, closes the browser and waits for
// every goroutine.
func (b *Bridge) shutdown() {
	b.mu.Lock()
	for _, in := range b.inflight {
		in.cancelled.Store(true)
		in.cancel()
	}
	b.mu.Unlock()
	b.bmu.Lock()
	all := b.browsers
	b.browsers = map[string]*liveBrowser{}
	b.bmu.Unlock()
	for _, lb := range all {
		lb.release()
	}
	b.wg.Wait()
	b.client.CloseIdleConnections()
}

func errorContent(code, msg string) string {
	raw, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	return string(raw)
}

// ErrorContentFor turns an error from the browser into the result content of
// the wire contract: a CDP error reply keeps its numeric code; a
// transport failure becomes one of the string codes unreachable,
// non_loopback, cdp_session_not_found, cancelled, or transport_error for any
// other; a deadline that passed once the command may have reached the
// browser is timeout, one that passed before the command was sent
// (dialling a stalled browser) is unreachable (nothing ran); both are
// transport errors at the server; a cancellation is cancelled; a refused
// command (bad params) is invalid_params; a command on a tab whose renderer
// crashed before it was sent is page_lost (the server's backend reports it
// as ClassClosed: no failover, navigate again).
func ErrorContentFor(err error) string {
	e := browserbackend.Classify(err, true)
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg == "" {
		msg = e.Error()
	}
	switch e.Class {
	case browserbackend.ClassProtocol:
		if e.CDPCode != 0 {
			raw, _ := json.Marshal(map[string]any{"code": e.CDPCode, "message": msg})
			return string(raw)
		}
		return errorContent(e.Code, msg)
	case browserbackend.ClassTimeout:
		if !e.Dispatched {
			if !strings.Contains(msg, "before the command was sent") {
				msg = "deadline passed before the command was sent: " + msg
			}
			return errorContent(browserbackend.CodeUnreachable, msg)
		}
		return errorContent(browserbackend.CodeTimeout, msg)
	case browserbackend.ClassAborted:
		return errorContent(browserbackend.CodeCancelled, msg)
	case browserbackend.ClassPolicy:
		return errorContent("invalid_params", msg)
	case browserbackend.ClassClosed:
		if e.Code == browserbackend.CodePageLost {
			return errorContent(e.Code, msg) // the tab crashed: navigate again
		}
	case browserbackend.ClassTransport:
		if hostproxy.IsTransportCode(e.Code) {
			return errorContent(e.Code, msg)
		}
		if e.Code != "" {
			msg = e.Code + ": " + msg
		}
	}
	return errorContent(browserbackend.CodeTransportError, msg)
}
