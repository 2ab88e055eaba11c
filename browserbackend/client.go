package browserbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Client is the per-invocation ScopedClient (SEL-1, SEL-4). Its first Send
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

	// walk serialises selection: it holds one token while a goroutine walks
	// the candidates. A channel rather than a mutex so waiters honour ctx.
	walk chan struct{}

	mu     sync.Mutex
	closed bool
	sticky ScopedClient
	// stickyCand is the candidate the sticky backend was built from; its
	// cooldown key applies to failures after the walk too (SEL-6).
	stickyCand Candidate
	// inMemo is set while the walk tries the remembered kind.
	inMemo   bool
	kind     Kind
	built    []ScopedClient
	attempts []Attempt
	walkFrom int             // index in attempts where the current walk began
	invalid  map[string]bool // flat sessions reported gone (SEL-14)
	wanted   map[string]bool // event methods subscribed through the client
	stops    []func()        // backend subscriptions to cancel on Close
	fwd      sync.WaitGroup  // event forwarders

	bus EventBus
}

var (
	_ ScopedClient = (*Client)(nil)
	_ cdp.Session  = (*Client)(nil)
)

func newClient(s *Selector, inv Invocation) *Client {
	return &Client{
		sel:    s,
		inv:    inv,
		walk:   make(chan struct{}, 1),
		wanted: map[string]bool{MethodTargetDetached: true},
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

// Send implements ScopedClient. The first call selects the backend (SEL-4);
// the error of a failed selection is a *SelectionError when candidates were
// exhausted or none could be proposed, or the deciding *Error when the walk
// ended on a non-failover error (a protocol error, a cancellation, a timeout
// after dispatch). A command bound to a flat session that its backend reported
// gone fails with ErrSessionNotFound without being sent (SEL-14). When ctx has
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
	case c.walk <- struct{}{}:
	case <-ctx.Done():
		return nil, ContextError(ctx, cmd.Method, false)
	}
	defer func() { <-c.walk }()
	if b, err := c.ready(cmd); b != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return c.sendSticky(ctx, b, cmd)
	}
	return c.walkCandidates(ctx, cmd)
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
	// SEL-6: a transport failure after the walk is still a transport
	// failure of a cooled-down kind of candidate; the next invocation must
	// skip it.
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
		ce.Backend = k
		ce.Err = err
		return ce
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
// may have reached a browser (a timeout after dispatch: outcome unknown).
// Backends use it so every ended context is classified the same way.
func ContextError(ctx context.Context, method string, dispatched bool) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := "deadline passed before an answer"
		if dispatched {
			msg += " (outcome unknown)"
		}
		return &Error{Class: ClassTimeout, Code: CodeTimeout, Method: method, Dispatched: dispatched,
			Message: msg, Err: context.Cause(ctx)}
	}
	return &Error{Class: ClassAborted, Code: CodeCancelled, Method: method, Dispatched: dispatched,
		Message: "cancelled by the caller", Err: context.Cause(ctx)}
}

// walkCandidates runs the SEL-4 walk for the first command, including the
// SEL-9 memo and the SEL-8 grace. It is called with the walk token held.
func (c *Client) walkCandidates(ctx context.Context, cmd Command) (json.RawMessage, error) {
	s, inv := c.sel, c.inv
	mode, pinnedKind, pinned, err := s.resolveMode(inv)
	if err != nil {
		return nil, err
	}
	// A caller that has already given up gets nothing built or launched.
	if ctx.Err() != nil {
		return nil, ContextError(ctx, cmd.Method, false)
	}
	c.mu.Lock()
	c.walkFrom = len(c.attempts)
	c.mu.Unlock()
	fellBack := false
	var failedMemo Kind

	// SEL-9: an auto invocation first tries the conversation's remembered
	// kind as if pinned; a transport failure forgets it and runs plain auto
	// without that kind (it has just failed for this very command). A
	// remembered kind that is no longer proposed is forgotten silently: no
	// candidate failed, so there is no fallback to report.
	if !pinned && inv.ConversationID != "" {
		if k, ok := s.memo.Get(inv.ConversationID); ok {
			c.setMemoPhase(true)
			cands, skipped, perr := s.propose(inv, k, true)
			c.addSkipped(skipped)
			if perr == nil && len(cands) > 0 {
				s.log.Info("trying the conversation's remembered backend", "candidateKind", k,
					"conversationId", inv.ConversationID)
				res, done, err := c.tryCandidate(ctx, cands[0], cmd, false, true)
				c.setMemoPhase(false)
				if done {
					if errors.Is(err, ErrTransport) {
						s.memo.Forget(inv.ConversationID)
					}
					return res, err
				}
				failedMemo, fellBack = k, true
				s.log.Warn("auto-mode fallback triggered", "from", k, "conversationId", inv.ConversationID,
					"attempts", AttemptSummary(c.walkAttempts()))
			}
			c.setMemoPhase(false)
			s.memo.Forget(inv.ConversationID)
			s.log.Info("forgot the conversation's remembered backend", "candidateKind", k,
				"conversationId", inv.ConversationID)
		}
	}

	var (
		cands   []Candidate
		skipped []Attempt
	)
	if pinned {
		cands, skipped, err = s.proposeWithGrace(ctx, inv, pinnedKind)
	} else {
		cands, skipped, err = s.propose(inv, "", false)
		if failedMemo != "" {
			cands = slices.DeleteFunc(cands, func(c Candidate) bool { return c.Kind == failedMemo })
		}
	}
	c.addSkipped(skipped)
	for _, a := range skipped {
		if a.Code == CodeCooldown {
			s.log.Info("candidate skipped: cooldown active", "candidateKind", a.Kind, "reason", a.Reason,
				"conversationId", inv.ConversationID)
		}
	}
	s.log.Info("candidate list built", "mode", mode, "pinned", pinned,
		"candidates", candidateSummary(cands), "conversationId", inv.ConversationID, "method", cmd.Method)
	if err != nil || len(cands) == 0 {
		if ctx.Err() != nil {
			// The caller gave up (e.g. during the reconnect grace): that,
			// not the provider's answer, decides.
			err = ContextError(ctx, cmd.Method, false)
		}
		return nil, c.selectionError(mode, pinned, err)
	}

	for i, cand := range cands {
		last := i == len(cands)-1
		res, done, err := c.tryCandidate(ctx, cand, cmd, !pinned && (i > 0 || fellBack), !last)
		if done {
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Class == ClassTransport {
					return nil, c.selectionError(mode, pinned, err)
				}
			}
			return res, err
		}
		if last {
			return nil, c.selectionError(mode, pinned, err)
		}
		if !pinned && !fellBack {
			s.log.Warn("auto-mode fallback triggered", "from", cand.Kind, "conversationId", inv.ConversationID,
				"attempts", AttemptSummary(c.walkAttempts()))
		}
		fellBack = true
	}
	panic("unreachable")
}

// tryCandidate builds cand and sends cmd on it. done is false when the walk
// should move on (the policy allowed failover); err is then the failure.
// hasNext says whether the walk has a candidate after this one: the failover
// record and hook are only emitted when it has.
func (c *Client) tryCandidate(ctx context.Context, cand Candidate, cmd Command, afterFallback, hasNext bool) (res json.RawMessage, done bool, err error) {
	s, inv := c.sel, c.inv
	start := time.Now()
	s.log.Debug("attempting candidate", "candidateKind", cand.Kind, "reason", cand.Reason,
		"conversationId", inv.ConversationID, "method", cmd.Method)
	if s.hooks.AttemptStart != nil {
		s.hooks.AttemptStart(inv, cand)
	}
	fail := func(stage Stage, e *Error) (json.RawMessage, bool, error) {
		a := Attempt{Kind: cand.Kind, Reason: cand.Reason, Stage: stage, Class: e.Class, Code: e.Code,
			Message: e.Message, DiscoveryCode: e.DiscoveryCode, Err: e}
		if a.Message == "" && e.Err != nil {
			a.Message = e.Err.Error()
		}
		c.addAttempts(a)
		if s.hooks.AttemptDone != nil {
			s.hooks.AttemptDone(inv, a, time.Since(start))
		}
		s.recordCooldown(cand, inv, e)
		if ctx.Err() == nil && s.policy.failover(e, stage) {
			if !hasNext {
				return nil, false, e
			}
			s.log.Info("transport-level failure, failing over to next candidate", "candidateKind", cand.Kind,
				"stage", stage, "code", e.Code, "conversationId", inv.ConversationID, "method", cmd.Method)
			if s.hooks.Failover != nil {
				s.hooks.Failover(inv, a)
			}
			return nil, false, e
		}
		return nil, true, e
	}

	if c.isClosed() {
		// Closed while the walk was under way: build nothing more.
		return nil, true, &Error{Class: ClassClosed, Code: CodeClosed, Method: cmd.Method, Backend: cand.Kind, Message: "client is closed"}
	}
	if cand.Build == nil {
		return fail(StageConstruction, &Error{Class: ClassTransport, Code: CodeTransportError, Backend: cand.Kind,
			Message: "candidate has no Build func"})
	}
	b, err := cand.Build(ctx)
	if err != nil {
		if b != nil {
			b.Close()
		}
		return fail(StageConstruction, c.classify(ctx, err, cmd.Method, cand.Kind, false))
	}
	if !c.keep(b) {
		return nil, true, &Error{Class: ClassClosed, Code: CodeClosed, Method: cmd.Method, Backend: cand.Kind, Message: "client is closed"}
	}
	// Subscribe before the first command: a browser may send events in
	// answer to it before its reply (Runtime.enable reports the existing
	// contexts first), and those must reach the client's subscribers.
	subs := c.presubscribe(b)
	res, err = b.Send(ctx, cmd)
	if err != nil {
		ce := c.classify(ctx, err, cmd.Method, cand.Kind, true)
		r, done, e := fail(StageSend, ce)
		if done && ce.Class == ClassProtocol {
			// The browser answered: the backend is live and serves the
			// rest of the invocation. Dropping it would rebuild (or
			// relaunch) a backend per failing command, and could move the
			// invocation to another browser half way through.
			c.stick(b, cand, subs)
			s.log.Info("candidate answered with a protocol error, backend is now sticky", "candidateKind", cand.Kind,
				"conversationId", inv.ConversationID, "method", cmd.Method, "cdpCode", ce.CDPCode)
			if s.hooks.Stick != nil {
				s.hooks.Stick(inv, cand.Kind)
			}
			return r, done, e
		}
		cancelSubs(subs)
		c.discard(b)
		return r, done, e
	}

	a := Attempt{Kind: cand.Kind, Reason: cand.Reason, Stage: StageSuccess}
	c.addAttempts(a)
	if s.hooks.AttemptDone != nil {
		s.hooks.AttemptDone(inv, a, time.Since(start))
	}
	c.stick(b, cand, subs)
	s.memo.Set(inv.ConversationID, cand.Kind)
	s.log.Info("candidate succeeded, backend is now sticky", "candidateKind", cand.Kind,
		"conversationId", inv.ConversationID, "method", cmd.Method)
	if afterFallback {
		s.log.Warn("auto-mode fallback completed", "candidateKind", cand.Kind,
			"conversationId", inv.ConversationID, "attempts", AttemptSummary(c.walkAttempts()))
	}
	if s.hooks.Stick != nil {
		s.hooks.Stick(inv, cand.Kind)
	}
	return res, true, nil
}

// walkAttempts returns a copy of the attempts of the current walk.
func (c *Client) walkAttempts() []Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Attempt(nil), c.attempts[c.walkFrom:]...)
}

func (c *Client) selectionError(mode Mode, pinned bool, deciding error) error {
	attempts := c.walkAttempts()
	se := &SelectionError{Mode: mode, Pinned: pinned, TargetClientID: c.inv.TargetClientID, Attempts: attempts, Err: deciding}
	seen := map[string]bool{}
	for _, a := range attempts {
		for _, r := range Remediation(a.Kind, a.Code) {
			if !seen[r] {
				seen[r] = true
				se.Remediation = append(se.Remediation, r)
			}
		}
	}
	if se.Err == nil {
		// Every provider skipped (or there were none): nothing was tried, so
		// the failure is "unavailable", matchable with ErrUnavailable.
		se.Err = &Error{Class: ClassUnavailable, Code: CodeNoCandidates, Message: "no provider proposed a candidate"}
	}
	return se
}

// addSkipped records candidate_selection attempts and reports each to the
// AttemptDone hook.
func (c *Client) addSkipped(as []Attempt) {
	c.addAttempts(as...)
	if h := c.sel.hooks.AttemptDone; h != nil {
		for _, a := range as {
			h(c.inv, a, 0)
		}
	}
}

func (c *Client) addAttempts(as ...Attempt) {
	if len(as) == 0 {
		return
	}
	c.mu.Lock()
	for _, a := range as {
		a.Remembered = c.inMemo
		c.attempts = append(c.attempts, a)
	}
	c.mu.Unlock()
}

// setMemoPhase marks the attempts added from now on as tries of the
// conversation's remembered kind (SEL-9), or stops marking them.
func (c *Client) setMemoPhase(on bool) {
	c.mu.Lock()
	c.inMemo = on
	c.mu.Unlock()
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

// discard closes a backend that failed and forgets it.
func (c *Client) discard(b ScopedClient) {
	c.mu.Lock()
	for i, x := range c.built {
		if x == b {
			c.built = append(c.built[:i], c.built[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	b.Close()
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
		ch, cancel := es.Subscribe(m)
		subs[i] = eventSub{method: m, ch: ch, cancel: cancel}
	}
	return subs
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
	ch, cancel := es.Subscribe(method)
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
// whichever backend ends up serving it (SEL-14). It can be called before the
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
	return rawEvents(c.Events, method, "")
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
