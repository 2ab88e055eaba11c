package browserbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Client is the per-invocation ScopedClient. Its first Send
// builds the candidate list and walks it; the first backend that answers
// becomes sticky, and every later command goes straight to it with its errors
// returned as they are.
//
// Client also satisfies cdproto's cdp.Session, so typed commands and events
// run on any backend:
//
//	res, err := cdp.Call(ctx, client, runtime.Evaluate, runtime.EvaluateParams{Expression: "1+1"})
//
// A Client is safe for concurrent use. Close is idempotent; it disposes every
// backend the invocation built and makes later Sends fail with ErrClosed.
type Client struct {
	sel *Selector
	inv Invocation

	// walking serialises selection: it holds one token while a goroutine
	// walks the candidates. A channel rather than a mutex so waiters honour
	// ctx.
	walking chan struct{}

	mu     sync.Mutex
	closed bool
	sticky ScopedClient
	// stickyCand is the candidate the sticky backend was built from; its
	// cooldown key applies to failures after the walk too.
	stickyCand Candidate
	kind       Kind
	built      []ScopedClient
	attempts   []Attempt
	walkFrom   int             // index in attempts where the current walk began
	invalid    map[string]bool // flat sessions reported gone
	wanted     map[string]bool // event methods subscribed through the client
	stops      []func()        // backend subscriptions to cancel on Close
	fwd        sync.WaitGroup  // event forwarders

	bus        EventBus
	rawDropped atomic.Int64 // events dropped by cdp.Session subscriptions
}

// DroppedEvents reports how many events were not delivered because a
// subscriber (of Events, or of Subscribe through cdp.Events) had fallen a
// whole buffer (DefaultEventBuffer) behind. Delivery never blocks the backend,
// so a slow subscriber loses events; this counts them.
func (c *Client) DroppedEvents() int64 { return c.bus.Dropped() + c.rawDropped.Load() }

var (
	_ ScopedClient = (*Client)(nil)
	_ cdp.Session  = (*Client)(nil)
)

func newClient(s *Selector, inv Invocation) *Client {
	return &Client{
		sel:     s,
		inv:     inv,
		walking: make(chan struct{}, 1),
		wanted:  map[string]bool{MethodTargetDetached: true},
	}
}

// Invocation returns the invocation the client serves.
func (c *Client) Invocation() Invocation { return c.inv }

// Kind returns the sticky backend's kind, or "" until a backend answered
// (with a result or a CDP protocol error).
func (c *Client) Kind() Kind {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kind
}

// Backend returns the sticky backend, or nil before the first success. Host
// apps type-assert it to reach backend-specific details (for example which
// hub client an extension backend is bound to); commands should still go
// through the Client.
func (c *Client) Backend() ScopedClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sticky
}

// Attempts returns a copy of the attempts made so far, in order.
func (c *Client) Attempts() []Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Attempt(nil), c.attempts...)
}

// Send implements ScopedClient. The first call selects the backend;
// the error of a failed selection is a *SelectionError when candidates were
// exhausted or none could be proposed, or the deciding *Error when the walk
// ended on a non-failover error (a protocol error, a cancellation, a timeout
// after dispatch). A command bound to a flat session that its backend reported
// gone fails with ErrSessionNotFound without being sent. When ctx has
// no deadline, the selector's CommandTimeout applies.
func (c *Client) Send(ctx context.Context, cmd Command) (json.RawMessage, error) {
	if err := CheckParams(cmd.Method, cmd.Params); err != nil {
		return nil, err // nothing is selected or sent for a malformed command
	}
	ctx, cancel := c.sel.withTimeout(ctx)
	defer cancel()
	if b, err := c.ready(cmd); b != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return c.sendSticky(ctx, b, cmd)
	}
	select {
	case c.walking <- struct{}{}:
	case <-ctx.Done():
		return nil, ContextError(ctx, cmd.Method, false)
	}
	defer func() { <-c.walking }()
	if b, err := c.ready(cmd); b != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return c.sendSticky(ctx, b, cmd)
	}
	return c.walk(ctx, cmd)
}

// ready returns the sticky backend, or an error when the client is closed or
// the command's session is known gone.
func (c *Client) ready(cmd Command) (ScopedClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &Error{Class: ClassClosed, Code: CodeClosed, Method: cmd.Method, Backend: c.kind, Message: "client is closed"}
	}
	if cmd.SessionID != "" && c.invalid[cmd.SessionID] {
		return nil, &Error{Class: ClassTransport, Code: CodeSessionNotFound, Method: cmd.Method, Backend: c.kind,
			Message: fmt.Sprintf("session %s is gone (its target detached)", cmd.SessionID)}
	}
	return c.sticky, nil
}

func (c *Client) sendSticky(ctx context.Context, b ScopedClient, cmd Command) (json.RawMessage, error) {
	res, err := b.Send(ctx, cmd)
	if err == nil {
		return res, nil
	}
	c.mu.Lock()
	cand := c.stickyCand
	c.mu.Unlock()
	e := c.classify(ctx, err, cmd.Method, cand.Kind, true)
	// A transport failure after the walk is still a transport failure of a
	// cooled-down kind of candidate; the next invocation must skip it.
	c.sel.recordCooldown(cand, c.inv, e)
	return nil, e
}

// classify turns a backend failure into an *Error. A done ctx decides the
// class (the caller's cancellation or deadline never fails over). dispatched
// is what an error that is not an *Error yet is classified with: false for a
// construction failure, true (unknown, so assume it may have) for a send.
func (c *Client) classify(ctx context.Context, err error, method string, k Kind, dispatched bool) *Error {
	e := Classify(err, dispatched)
	if ctx.Err() != nil && e.Class != ClassClosed {
		ce := ContextError(ctx, method, e.Dispatched)
		if e.Class != ce.Class {
			// The caller's deadline or cancellation decides the class; the
			// backend's own failure stays as the cause, and what it knew of
			// the backend's state is kept.
			ce.Backend, ce.Err = k, err
			if ce.Class == ClassTimeout {
				ce.Diagnostics = e.Diagnostics
			}
			return ce
		}
		// The backend already classified the ended context (with its own
		// diagnostics): keep it.
	}
	if e.Method == "" || e.Backend == "" {
		cp := *e
		if cp.Method == "" {
			cp.Method = method
		}
		if cp.Backend == "" {
			cp.Backend = k
		}
		e = &cp
	}
	return e
}

// ContextError is the *Error for a command whose ctx ended: ClassTimeout
// (code timeout) when its deadline passed, ClassAborted (code cancelled)
// otherwise; Err is context.Cause(ctx). dispatched says whether the command
// may have reached a browser: a timeout after dispatch says "outcome
// unknown", one before it says the command was never sent.
// Backends use it so every ended context is classified the same way.
func ContextError(ctx context.Context, method string, dispatched bool) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := "deadline passed before the command was sent"
		if dispatched {
			msg = "deadline passed before an answer (outcome unknown)"
		}
		return &Error{Class: ClassTimeout, Code: CodeTimeout, Method: method, Dispatched: dispatched,
			Message: msg, Err: context.Cause(ctx)}
	}
	return &Error{Class: ClassAborted, Code: CodeCancelled, Method: method, Dispatched: dispatched,
		Message: "cancelled by the caller", Err: context.Cause(ctx)}
}

// beginWalk marks where the current walk's attempts begin.
func (c *Client) beginWalk() {
	c.mu.Lock()
	c.walkFrom = len(c.attempts)
	c.mu.Unlock()
}

// walkAttempts returns a copy of the attempts of the current walk.
func (c *Client) walkAttempts() []Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Attempt(nil), c.attempts[c.walkFrom:]...)
}

// addSkipped records candidate_selection attempts and reports each to the
// AttemptDone hook. remembered marks skips of the memo step.
func (c *Client) addSkipped(as []Attempt, remembered bool) {
	for _, a := range as {
		c.record(remembered, a, time.Time{})
	}
}

// record appends an attempt and reports it to the AttemptDone hook with the
// time since start (0 for a zero start).
func (c *Client) record(remembered bool, a Attempt, start time.Time) {
	a.Remembered = remembered
	if !start.IsZero() {
		a.Elapsed = time.Since(start)
	}
	c.mu.Lock()
	c.attempts = append(c.attempts, a)
	c.mu.Unlock()
	if h := c.sel.hooks.AttemptDone; h != nil {
		h(c.inv, a, a.Elapsed)
	}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// keep registers a built backend for disposal; false (and the backend closed)
// when the client was closed meanwhile.
func (c *Client) keep(b ScopedClient) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		b.Close()
		return false
	}
	c.built = append(c.built, b)
	c.mu.Unlock()
	return true
}

// discardLast closes the backend kept last (the one the walk just tried and
// that failed) and forgets it. Walks are serialised, so it is the last one;
// backends are not compared (a SendFunc is not comparable).
func (c *Client) discardLast() {
	c.mu.Lock()
	var b ScopedClient
	if n := len(c.built); n > 0 {
		b, c.built = c.built[n-1], c.built[:n-1]
	}
	c.mu.Unlock()
	if b != nil {
		_ = b.Close()
	}
}

// stick makes b the invocation's backend and starts forwarding the events the
// client's subscribers asked for: subs, taken before the first command, and a
// fresh subscription for any method asked for since.
func (c *Client) stick(b ScopedClient, cand Candidate, subs []eventSub) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cancelSubs(subs)
		return // Close already disposed b
	}
	c.sticky, c.kind, c.stickyCand = b, cand.Kind, cand
	have := make(map[string]bool, len(subs))
	for _, sub := range subs {
		have[sub.method] = true
		c.startForwarderLocked(sub)
	}
	if _, ok := b.(EventSource); ok {
		for m := range c.wanted {
			if !have[m] {
				c.forwardLocked(m)
			}
		}
	}
}

// eventSub is one subscription on a backend, by method.
type eventSub struct {
	method string
	ch     <-chan Event
	cancel func()
}

// presubscribe subscribes to every method the client's subscribers want on b
// (nothing when b is not an EventSource). Events arriving before stick wait in
// the subscription's buffer.
func (c *Client) presubscribe(b ScopedClient) []eventSub {
	es, ok := b.(EventSource)
	if !ok {
		return nil
	}
	c.mu.Lock()
	methods := make([]string, 0, len(c.wanted))
	for m := range c.wanted {
		methods = append(methods, m)
	}
	c.mu.Unlock()
	subs := make([]eventSub, len(methods))
	for i, m := range methods {
		ch, cancel := subscribeOn(es, m)
		subs[i] = eventSub{method: m, ch: ch, cancel: cancel}
	}
	return subs
}

// detachWatchBuffer is the backend-side buffer of the Client's
// MethodTargetDetached forwarder: detaches are rare, and the forwarder moves
// them at once into the Client's own bus, whose subscribers have full-size
// buffers.
const detachWatchBuffer = 64

// subscribeOn subscribes to method on es, with a small buffer for the
// Client's own detach watch when es can size one.
func subscribeOn(es EventSource, method string) (<-chan Event, func()) {
	if bs, ok := es.(BufferedEventSource); ok && method == MethodTargetDetached {
		return bs.SubscribeBuffer(method, detachWatchBuffer)
	}
	return es.Subscribe(method)
}

func cancelSubs(subs []eventSub) {
	for _, s := range subs {
		s.cancel()
	}
}

// forwardLocked subscribes to method on the sticky backend and forwards it.
// c.mu must be held.
func (c *Client) forwardLocked(method string) {
	es, ok := c.sticky.(EventSource)
	if !ok {
		return
	}
	ch, cancel := subscribeOn(es, method)
	c.startForwarderLocked(eventSub{method: method, ch: ch, cancel: cancel})
}

// startForwarderLocked republishes sub's events to the client's subscribers
// of exactly sub.method, so a subscriber of every event ("") and one of a
// single method never see an event twice. Every forwarder watches
// Target.detachedFromTarget to invalidate sessions. c.mu must be held.
func (c *Client) startForwarderLocked(sub eventSub) {
	c.stops = append(c.stops, sub.cancel)
	c.fwd.Add(1)
	go func() {
		defer c.fwd.Done()
		for ev := range sub.ch {
			if ev.Method == MethodTargetDetached {
				c.invalidate(ev)
			}
			c.bus.publishExact(sub.method, ev)
		}
	}()
}

func (c *Client) invalidate(ev Event) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(ev.Params, &p) != nil || p.SessionID == "" {
		p.SessionID = ev.SessionID
	}
	if p.SessionID == "" {
		return
	}
	c.mu.Lock()
	if c.invalid == nil {
		c.invalid = make(map[string]bool)
	}
	c.invalid[p.SessionID] = true
	c.mu.Unlock()
}

// Events subscribes to the invocation's CDP events of method (all when empty),
// whichever backend ends up serving it. It can be called before the
// first Send. Delivery never blocks the backend; a subscriber that falls
// DefaultEventBuffer events behind loses events. The channel closes on cancel
// or Close.
func (c *Client) Events(method string) (<-chan Event, func()) {
	c.mu.Lock()
	if !c.wanted[method] {
		c.wanted[method] = true
		if c.sticky != nil {
			c.forwardLocked(method)
		}
	}
	c.mu.Unlock()
	return c.bus.Subscribe(method)
}

// Subscribe implements cdp.Session: it returns the params of the events of
// method as raw JSON. See Events for delivery rules.
func (c *Client) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return rawEvents(c.Events, method, "", &c.rawDropped)
}

// Close implements ScopedClient: it closes every backend the invocation
// built, stops event forwarding and closes subscriber channels. Idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	built, stops := c.built, c.stops
	c.built, c.stops, c.sticky = nil, nil, nil
	c.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	var errs []error
	for _, b := range built {
		if err := b.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	c.fwd.Wait()
	c.bus.Close()
	return errors.Join(errs...)
}

// Call implements cdp.Session: params are marshalled with cdproto's jsonv2
// (nil or cdp.Empty for none), the result is decoded into result (ignored
// when nil).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return call(ctx, c, Command{Method: method}, params, result)
}

// AttemptSummary renders attempts compactly for logs:
// "cdp-inspect@construction[unreachable]".
func AttemptSummary(as []Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a.Kind) + "@" + string(a.Stage)
		if a.Code != "" {
			out[i] += "[" + a.Code + "]"
		}
		if a.Remembered {
			out[i] += "(remembered)"
		}
	}
	return out
}

func candidateSummary(cs []Candidate) []map[string]string {
	out := make([]map[string]string, len(cs))
	for i, c := range cs {
		out[i] = map[string]string{"kind": string(c.Kind), "reason": c.Reason}
	}
	return out
}
