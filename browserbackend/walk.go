package browserbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file is the whole selection walk. An invocation's first command is served
// in two steps, each a Plan run by the same loop (run):
//
//  1. remembered: an auto invocation whose conversation a kind served before
//     tries that kind first, as if pinned. Success or an error that
//     must not fail over ends the walk; a failover forgets the kind and goes
//     on without it.
//  2. the plan: the providers' candidates in order (pinned: the one kind,
//     waiting out the reconnect grace when its descriptor declares one),
//     tried until one answers. Running out of candidates, or a
//     transport error the policy does not fail over, is a *SelectionError
//     with every attempt and the remediation of each kind.
//
// A candidate "answers" when it returns a result or a CDP protocol error;
// either way its backend becomes sticky for the rest of the invocation.

// resolved is what an invocation asks for once its mode is parsed: only one
// kind (pinned) or every provider in order.
type resolved struct {
	mode   Mode
	only   Kind
	pinned bool
}

// resolve parses inv's mode against the descriptors. A target client pins the
// first kind that declares Descriptor.TargetClients.
func (s *Selector) resolve(inv Invocation) (resolved, error) {
	e, ok := s.modes.parse(string(inv.Mode))
	if !ok {
		return resolved{}, s.modes.invalid(string(inv.Mode))
	}
	r := resolved{mode: e.mode, only: e.kind, pinned: e.kind != ""}
	if inv.TargetClientID == "" {
		return r, nil
	}
	var serving []string
	for _, d := range s.descs {
		if !d.TargetClients {
			continue
		}
		if r.only == "" || r.only == d.Kind {
			return resolved{mode: r.mode, only: d.Kind, pinned: true}, nil
		}
		serving = append(serving, string(d.Mode))
	}
	return resolved{}, &Error{Class: ClassPolicy, Code: CodeInvalidMode,
		Message: fmt.Sprintf("a target client id requires browser_mode auto or one of [%s], got %s",
			strings.Join(serving, ", "), r.mode)}
}

// propose asks the providers for candidates: every provider in order, or only
// those of r.only. A provider error that is not a skip ends selection (Err).
func (s *Selector) propose(inv Invocation, r resolved) Plan {
	p := Plan{Mode: r.mode, Pinned: r.pinned}
	env := Env{Pinned: r.pinned, Cooldowns: s.cooldowns}
	for i, prov := range s.providers {
		d := s.descs[i]
		if r.only != "" && d.Kind != r.only {
			continue
		}
		c, err := prov.Propose(inv, env)
		if err == nil {
			if c.Kind == "" {
				c.Kind = d.Kind
			}
			if inv.Tab.Want != TabCurrent && !d.Caps.Has(CapTabs) {
				// The call must not move to another browser because this
				// one cannot choose tabs: it fails here, typed.
				c.Build = cannotChooseTabs(c.Kind)
			}
			p.Candidates = append(p.Candidates, c)
			continue
		}
		p.Skipped = append(p.Skipped, skipAttempt(d.Kind, err))
		if !errors.Is(err, ErrSkip) {
			p.Candidates, p.Err = nil, err
			return p
		}
	}
	return p
}

// cannotChooseTabs is the Build of a candidate whose kind does not declare
// CapTabs, for an invocation that asks for another tab than the current one.
func cannotChooseTabs(k Kind) func(context.Context) (ScopedClient, error) {
	return func(context.Context) (ScopedClient, error) {
		return nil, &Error{Class: ClassPolicy, Code: CodeNotSupported, Backend: k,
			Message: "this backend does not choose tabs: a new tab, the user's active tab or a tab by id is not supported"}
	}
}

func skipAttempt(k Kind, err error) Attempt {
	a := Attempt{Kind: k, Stage: StageCandidateSelection, Message: err.Error(), Err: err}
	var skip *SkipError
	var e *Error
	switch {
	case errors.As(err, &skip):
		a.Code, a.Reason, a.Message, a.Yielded = skip.Code, skip.Reason, skip.Reason, skip.Yielded
	case errors.As(err, &e):
		a.Class, a.Code, a.Message, a.Detail = e.Class, e.Code, e.Message, e.Detail
	}
	return a
}

// proposeWithGrace is propose for a pinned invocation whose kind declares a
// grace: while nothing is proposed it waits, woken by the providers' Changed,
// up to the grace period or ctx.
func (s *Selector) proposeWithGrace(ctx context.Context, inv Invocation, r resolved) Plan {
	d, _ := s.Descriptor(r.only)
	ws := s.watchers(r.only)
	if !r.pinned || !d.Grace || s.grace < 0 || len(ws) == 0 {
		return s.propose(inv, r)
	}
	timer := time.NewTimer(s.grace)
	defer timer.Stop()
	logged := false
	for {
		// Take the change channels before proposing, so a change between
		// the two is not missed.
		changed := make([]<-chan struct{}, len(ws))
		for i, w := range ws {
			changed[i] = w.Changed()
		}
		p := s.propose(inv, r)
		if len(p.Candidates) > 0 {
			return p
		}
		if !logged {
			logged = true
			s.log.Info("waiting for a candidate to appear", "candidateKind", r.only, "grace", s.grace,
				"conversationId", inv.ConversationID, "targetClientId", inv.TargetClientID)
		}
		woken, stop := anyClosed(changed)
		select {
		case <-timer.C:
		case <-ctx.Done():
		case <-woken:
			stop()
			continue
		}
		stop()
		return p
	}
}

// watchers returns the Watchers among the providers of kind k.
func (s *Selector) watchers(k Kind) []Watcher {
	var ws []Watcher
	for i, p := range s.providers {
		if w, ok := p.(Watcher); ok && s.descs[i].Kind == k {
			ws = append(ws, w)
		}
	}
	return ws
}

// anyClosed returns a channel closed when any of chans is closed, and a stop
// func that releases the goroutines it started (none for a single channel).
func anyClosed(chans []<-chan struct{}) (<-chan struct{}, func()) {
	if len(chans) == 1 {
		return chans[0], func() {}
	}
	out := make(chan struct{})
	stop := make(chan struct{})
	var once sync.Once
	for _, c := range chans {
		go func() {
			select {
			case <-c:
				once.Do(func() { close(out) })
			case <-stop:
			}
		}()
	}
	return out, func() { close(stop) }
}

// walker is the state of one walk: what was asked, and whether auto mode has
// left its first choice (for the fallback log records).
type walker struct {
	c        *Client
	cmd      Command
	r        resolved
	fellBack bool
}

// outcome is how a plan's run ended: a result, or err with done telling
// whether the policy refused to fail over (false: the plan ran out).
type outcome struct {
	res  json.RawMessage
	err  *Error
	done bool
}

// walk serves the first command (see the file comment). The caller holds the
// client's walk token.
func (c *Client) walk(ctx context.Context, cmd Command) (json.RawMessage, error) {
	r, err := c.sel.resolve(c.inv)
	if err != nil {
		return nil, err
	}
	// A caller that has already given up gets nothing built or launched.
	if ctx.Err() != nil {
		return nil, ContextError(ctx, cmd.Method, false)
	}
	c.beginWalk()
	w := &walker{c: c, cmd: cmd, r: r}
	exclude, out, served := w.remembered(ctx)
	if served {
		return out.res, out.error()
	}
	plan := w.plan(ctx, exclude)
	if plan.Err != nil || len(plan.Candidates) == 0 {
		deciding := plan.Err
		if ctx.Err() != nil {
			// The caller gave up (e.g. during the reconnect grace): that,
			// not the provider's answer, decides.
			deciding = ContextError(ctx, cmd.Method, false)
		}
		return nil, c.selectionError(r, deciding)
	}
	out = w.run(ctx, plan, false)
	switch {
	case out.err == nil:
		return out.res, nil
	case out.done && out.err.Class != ClassTransport:
		return nil, out.err
	}
	return nil, c.selectionError(r, out.err)
}

func (o outcome) error() error {
	if o.err == nil {
		return nil
	}
	return o.err
}

// remembered runs step 1. served is true when it ended the walk; otherwise
// exclude is the remembered kind that just failed over ("" when none was
// tried), which the plan leaves out.
func (w *walker) remembered(ctx context.Context) (exclude Kind, out outcome, served bool) {
	s, inv := w.c.sel, w.c.inv
	if w.r.pinned || inv.ConversationID == "" {
		return "", outcome{}, false
	}
	k, ok := s.memo.Get(inv.ConversationID)
	if !ok {
		return "", outcome{}, false
	}
	p := s.propose(inv, resolved{mode: w.r.mode, only: k, pinned: true})
	w.c.addSkipped(p.Skipped, true)
	if p.Err == nil && len(p.Candidates) > 0 {
		s.log.Info("trying the conversation's remembered backend", "candidateKind", k,
			"conversationId", inv.ConversationID)
		p.Candidates = p.Candidates[:1]
		out = w.run(ctx, p, true)
		if out.err == nil || out.done {
			if out.err != nil && out.err.Class == ClassTransport {
				s.memo.Forget(inv.ConversationID)
			}
			return "", out, true
		}
		exclude = k
	}
	// Not proposed any more, or failed over: forget it; plain auto follows.
	s.memo.Forget(inv.ConversationID)
	s.log.Info("forgot the conversation's remembered backend", "candidateKind", k,
		"conversationId", inv.ConversationID)
	return exclude, outcome{}, false
}

// plan builds step 2's candidate list and records its skips.
func (w *walker) plan(ctx context.Context, exclude Kind) Plan {
	s, inv := w.c.sel, w.c.inv
	var p Plan
	if w.r.pinned {
		p = s.proposeWithGrace(ctx, inv, w.r)
	} else {
		p = s.propose(inv, w.r)
		p.Candidates = slices.DeleteFunc(p.Candidates, func(c Candidate) bool { return c.Kind == exclude })
	}
	w.c.addSkipped(p.Skipped, false)
	for _, a := range p.Skipped {
		if a.Code == CodeCooldown {
			s.log.Info("candidate skipped: cooldown active", "candidateKind", a.Kind, "reason", a.Reason,
				"conversationId", inv.ConversationID)
		}
	}
	s.log.Info("candidate list built", "mode", w.r.mode, "pinned", w.r.pinned,
		"candidates", candidateSummary(p.Candidates), "conversationId", inv.ConversationID, "method", w.cmd.Method)
	return p
}

// run is the one loop: try p's candidates in order until one answers or the
// policy refuses to fail over. remembered marks step 1, after which the walk
// always has more to try.
func (w *walker) run(ctx context.Context, p Plan, remembered bool) outcome {
	var out outcome
	for i, cand := range p.Candidates {
		hasNext := remembered || i < len(p.Candidates)-1
		out = w.try(ctx, cand, remembered, hasNext)
		if out.err == nil || out.done || !hasNext {
			return out
		}
		if !w.r.pinned && !w.fellBack {
			w.c.sel.log.Warn("auto-mode fallback triggered", "from", cand.Kind, "conversationId", w.c.inv.ConversationID,
				"attempts", AttemptSummary(w.c.walkAttempts()))
		}
		w.fellBack = true
	}
	return out
}

// try builds cand and sends the command on it.
func (w *walker) try(ctx context.Context, cand Candidate, remembered, hasNext bool) outcome {
	c, s, inv := w.c, w.c.sel, w.c.inv
	start := time.Now()
	s.log.Debug("attempting candidate", "candidateKind", cand.Kind, "reason", cand.Reason,
		"conversationId", inv.ConversationID, "method", w.cmd.Method)
	if s.hooks.AttemptStart != nil {
		s.hooks.AttemptStart(inv, cand)
	}
	b, e := w.build(ctx, cand)
	if e != nil {
		if e.Class == ClassClosed {
			return outcome{err: e, done: true}
		}
		return w.fail(ctx, cand, StageConstruction, e, start, remembered, hasNext)
	}
	// Subscribe before the first command: a browser may send events in
	// answer to it before its reply (Runtime.enable reports the existing
	// contexts first), and those must reach the client's subscribers.
	subs := c.presubscribe(b)
	res, err := b.Send(ctx, w.cmd)
	if err == nil {
		c.record(remembered, Attempt{Kind: cand.Kind, Reason: cand.Reason, Stage: StageSuccess}, start)
		c.stick(b, cand, subs)
		s.memo.Set(inv.ConversationID, cand.Kind)
		s.log.Info("candidate succeeded, backend is now sticky", "candidateKind", cand.Kind,
			"conversationId", inv.ConversationID, "method", w.cmd.Method)
		if w.fellBack {
			s.log.Warn("auto-mode fallback completed", "candidateKind", cand.Kind,
				"conversationId", inv.ConversationID, "attempts", AttemptSummary(c.walkAttempts()))
		}
		w.hookStick(cand)
		return outcome{res: res, done: true}
	}
	e = c.classify(ctx, err, w.cmd.Method, cand.Kind, true)
	out := w.fail(ctx, cand, StageSend, e, start, remembered, hasNext)
	if out.done && e.Class == ClassProtocol {
		// The browser answered: the backend is live and serves the rest of
		// the invocation. Dropping it would rebuild (or relaunch) a backend
		// per failing command, and could move the invocation to another
		// browser half way through.
		c.stick(b, cand, subs)
		s.log.Info("candidate answered with a protocol error, backend is now sticky", "candidateKind", cand.Kind,
			"conversationId", inv.ConversationID, "method", w.cmd.Method, "cdpCode", e.CDPCode)
		w.hookStick(cand)
		return out
	}
	cancelSubs(subs)
	c.discardLast()
	return out
}

// build constructs cand's backend and registers it with the client.
func (w *walker) build(ctx context.Context, cand Candidate) (ScopedClient, *Error) {
	closed := &Error{Class: ClassClosed, Code: CodeClosed, Method: w.cmd.Method, Backend: cand.Kind, Message: "client is closed"}
	if w.c.isClosed() {
		return nil, closed // closed while the walk was under way: build nothing more
	}
	if cand.Build == nil {
		return nil, &Error{Class: ClassTransport, Code: CodeTransportError, Backend: cand.Kind,
			Message: "candidate has no Build func"}
	}
	b, err := cand.Build(ctx)
	if err != nil {
		if b != nil {
			_ = b.Close()
		}
		return nil, w.c.classify(ctx, err, w.cmd.Method, cand.Kind, false)
	}
	if !w.c.keep(b) {
		return nil, closed
	}
	return b, nil
}

// fail records a failed attempt and its cooldown, and asks the policy whether
// the walk moves on (done false) or ends with e (done true).
func (w *walker) fail(ctx context.Context, cand Candidate, stage Stage, e *Error, start time.Time, remembered, hasNext bool) outcome {
	c, s, inv := w.c, w.c.sel, w.c.inv
	a := Attempt{Kind: cand.Kind, Reason: cand.Reason, Stage: stage, Class: e.Class, Code: e.Code,
		Message: e.Message, Detail: e.Detail, Diagnostics: e.Diagnostics, Err: e}
	if a.Message == "" && e.Err != nil {
		a.Message = e.Err.Error()
	}
	c.record(remembered, a, start)
	s.recordCooldown(cand, inv, e)
	if ctx.Err() != nil || !s.policy.failover(e, stage) {
		return outcome{err: e, done: true}
	}
	if hasNext {
		s.log.Info("transport-level failure, failing over to next candidate", "candidateKind", cand.Kind,
			"stage", stage, "code", e.Code, "conversationId", inv.ConversationID, "method", w.cmd.Method)
		if s.hooks.Failover != nil {
			s.hooks.Failover(inv, a)
		}
	}
	return outcome{err: e}
}

func (w *walker) hookStick(cand Candidate) {
	if h := w.c.sel.hooks.Stick; h != nil {
		h(w.c.inv, cand.Kind)
	}
}

// recordCooldown starts cand's cooldown after a transport failure, on
// every path: construction, send, and sends after the walk.
func (s *Selector) recordCooldown(c Candidate, inv Invocation, e *Error) {
	// A session that went away (its tab was closed) is a failure of the
	// command, not of the backend: the browser still answers, so the next
	// invocation should try it again.
	if c.CooldownKey == "" || c.CooldownFor <= 0 || e.Class != ClassTransport || e.Code == CodeSessionNotFound {
		return
	}
	s.cooldowns.Record(c.CooldownKey, c.CooldownFor)
	s.log.Info("cooldown recorded after transport failure", "candidateKind", c.Kind,
		"cooldownKey", c.CooldownKey, "cooldown", c.CooldownFor, "code", e.Code,
		"conversationId", inv.ConversationID)
	if s.hooks.Cooldown != nil {
		s.hooks.Cooldown(c.CooldownKey, c.CooldownFor)
	}
}

// selectionError is the walk's failure: every attempt of this walk, the
// remediation their kinds' descriptors give, and the deciding error.
func (c *Client) selectionError(r resolved, deciding error) error {
	attempts := c.walkAttempts()
	se := &SelectionError{Mode: r.mode, Pinned: r.pinned, TargetClientID: c.inv.TargetClientID,
		Attempts: attempts, Remediation: c.sel.remediation(attempts), Err: deciding}
	if se.Err == nil {
		// Every provider skipped (or there were none): nothing was tried, so
		// the failure is "unavailable", matchable with ErrUnavailable.
		se.Err = &Error{Class: ClassUnavailable, Code: CodeNoCandidates, Message: "no provider proposed a candidate"}
	}
	return se
}

// remediation gathers, without duplicates, what the attempts' descriptors
// advise; a yielded skip needs no advice.
func (s *Selector) remediation(attempts []Attempt) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range attempts {
		d, ok := s.Descriptor(a.Kind)
		if !ok || d.Remediation == nil || a.Yielded || a.Stage == StageSuccess {
			continue
		}
		for _, r := range d.Remediation(a) {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// Remediation returns what kind k's descriptor advises for attempt a, nil
// when k is unknown or has no advice.
func (s *Selector) Remediation(a Attempt) []string {
	return s.remediation([]Attempt{a})
}
