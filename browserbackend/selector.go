package browserbackend

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultExtensionGrace is how long an invocation pinned to the extension
	// (or aimed at a target client) waits for a client to appear (SEL-8).
	DefaultExtensionGrace = 3 * time.Second
	// DefaultCommandTimeout bounds a Send whose context has no deadline.
	DefaultCommandTimeout = 30 * time.Second
)

// Hooks lets a host app observe selection without the library depending on a
// metrics or tracing package (SEL-11). Every field is optional. Hooks are
// called synchronously on the goroutine that sends the command, in the order
// the events happen; they must be quick and must not call back into the
// Client.
type Hooks struct {
	// AttemptStart is called before a candidate is built.
	AttemptStart func(inv Invocation, c Candidate)
	// AttemptDone is called when a candidate is skipped, fails or succeeds.
	AttemptDone func(inv Invocation, a Attempt, elapsed time.Duration)
	// Failover is called when the walk moves past a failed candidate.
	Failover func(inv Invocation, failed Attempt)
	// Stick is called when a backend becomes sticky for the invocation.
	Stick func(inv Invocation, k Kind)
	// Cooldown is called when a cooldown is recorded.
	Cooldown func(key string, d time.Duration)
}

// Options configures a Selector. The zero value of every field has a working
// default; Providers must be set for anything to be selected.
type Options struct {
	// Providers, in auto order (SEL-2, SEL-3). The reference order is
	// extension, host-bridge, cdp-inspect, local.
	Providers []Provider
	// Policy decides failover (SEL-5); zero means DefaultPolicy.
	Policy Policy
	// Logger receives the selection records, with attribute
	// module=cdp-factory; nil means slog.Default().
	Logger *slog.Logger
	// Hooks observe selection.
	Hooks Hooks
	// Cooldowns is shared by invocations (SEL-6); nil means a new one.
	Cooldowns *Cooldowns
	// Memo is the per-conversation memo (SEL-9); nil means a new one.
	Memo *Memo
	// ExtensionGrace is the SEL-8 wait; 0 means DefaultExtensionGrace, a
	// negative value disables the wait.
	ExtensionGrace time.Duration
	// CommandTimeout bounds a Send whose ctx has no deadline; 0 means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
}

// Selector builds per-invocation Clients that choose their backend lazily,
// fail over on transport errors and stick to the first backend that answers
// (SEL-2 … SEL-9). A Selector is safe for concurrent use and is meant to live
// as long as the host application; it holds no goroutines.
type Selector struct {
	providers []Provider
	policy    Policy
	log       *slog.Logger
	hooks     Hooks
	cooldowns *Cooldowns
	memo      *Memo
	grace     time.Duration
	timeout   time.Duration
}

// NewSelector returns a Selector with the options' defaults filled in.
func NewSelector(o Options) *Selector {
	s := &Selector{
		providers: append([]Provider(nil), o.Providers...),
		policy:    o.Policy,
		log:       o.Logger,
		hooks:     o.Hooks,
		cooldowns: o.Cooldowns,
		memo:      o.Memo,
		grace:     o.ExtensionGrace,
		timeout:   o.CommandTimeout,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("module", "cdp-factory")
	if s.cooldowns == nil {
		s.cooldowns = &Cooldowns{}
	}
	if s.memo == nil {
		s.memo = &Memo{}
	}
	if s.grace == 0 {
		s.grace = DefaultExtensionGrace
	}
	if s.timeout <= 0 {
		s.timeout = DefaultCommandTimeout
	}
	return s
}

// Cooldowns returns the selector's cooldown store.
func (s *Selector) Cooldowns() *Cooldowns { return s.cooldowns }

// Memo returns the selector's conversation memo.
func (s *Selector) Memo() *Memo { return s.memo }

// Forget drops the conversation's remembered backend (SEL-9); tools call it
// on detach and close.
func (s *Selector) Forget(conversationID string) { s.memo.Forget(conversationID) }

// Client returns the per-invocation client. It never blocks: the candidate
// list is built, and the reconnect grace waited, at the first Send.
func (s *Selector) Client(inv Invocation) *Client {
	if inv.Mode == "" {
		inv.Mode = ModeAuto
	}
	return newClient(s, inv)
}

// Plan is the candidate list an invocation would get now, without waiting
// and without building anything (SEL-13).
type Plan struct {
	// Mode is the canonical requested mode.
	Mode Mode
	// Pinned is true for a pinned mode or a target client.
	Pinned bool
	// Candidates in the order they would be tried.
	Candidates []Candidate
	// Skipped lists the providers that proposed nothing, with their reasons.
	Skipped []Attempt
	// Err is a selection failure (invalid mode, target client not
	// connected), nil otherwise.
	Err error
}

// Kinds returns the candidates' kinds in order.
func (p Plan) Kinds() []Kind {
	ks := make([]Kind, len(p.Candidates))
	for i, c := range p.Candidates {
		ks[i] = c.Kind
	}
	return ks
}

// Plan returns the candidate list for inv as it stands now. It ignores the
// memo and does not wait for the grace period.
func (s *Selector) Plan(inv Invocation) Plan {
	mode, pinnedKind, pinned, err := s.resolveMode(inv)
	if err != nil {
		return Plan{Mode: inv.Mode, Err: err}
	}
	cands, skipped, err := s.propose(inv, pinnedKind, pinned)
	return Plan{Mode: mode, Pinned: pinned, Candidates: cands, Skipped: skipped, Err: err}
}

// resolveMode canonicalises the invocation's mode. A target client pins the
// extension kind.
func (s *Selector) resolveMode(inv Invocation) (mode Mode, k Kind, pinned bool, err error) {
	mode, err = ParseMode(string(inv.Mode))
	if err != nil {
		return "", "", false, err
	}
	if inv.TargetClientID != "" {
		if mode != ModeAuto && mode != ModeExtension {
			return "", "", false, &Error{Class: ClassPolicy, Code: CodeInvalidMode,
				Message: "a target client id requires browser_mode auto or extension, got " + string(mode)}
		}
		return mode, KindExtension, true, nil
	}
	k, pinned = mode.Kind()
	return mode, k, pinned, nil
}

// propose asks the providers for candidates: every provider in order when
// only is empty, else only the providers of kind only (pinned). A non-skip
// provider error ends selection.
func (s *Selector) propose(inv Invocation, only Kind, pinned bool) ([]Candidate, []Attempt, error) {
	var (
		cands   []Candidate
		skipped []Attempt
	)
	env := Env{Pinned: pinned, Cooldowns: s.cooldowns}
	for _, p := range s.providers {
		if only != "" && p.Kind() != only {
			continue
		}
		c, err := p.Propose(inv, env)
		if err != nil {
			a := Attempt{Kind: p.Kind(), Stage: StageCandidateSelection, Message: err.Error(), Err: err}
			var skip *SkipError
			if errors.As(err, &skip) {
				a.Code, a.Reason, a.Message = skip.Code, skip.Reason, skip.Reason
				skipped = append(skipped, a)
				continue
			}
			if e := (*Error)(nil); errors.As(err, &e) {
				a.Class, a.Code, a.Message = e.Class, e.Code, e.Message
			}
			skipped = append(skipped, a)
			return nil, skipped, err
		}
		if c.Kind == "" {
			c.Kind = p.Kind()
		}
		cands = append(cands, c)
	}
	return cands, skipped, nil
}

// graceWatchers returns the Watchers among the providers of kind k.
func (s *Selector) graceWatchers(k Kind) []Watcher {
	var ws []Watcher
	for _, p := range s.providers {
		if w, ok := p.(Watcher); ok && p.Kind() == k {
			ws = append(ws, w)
		}
	}
	return ws
}

// proposeWithGrace is propose for a pinned extension invocation: while no
// candidate is proposed it waits, woken by the providers' roster changes, up
// to the grace period (SEL-8).
func (s *Selector) proposeWithGrace(ctx context.Context, inv Invocation, k Kind) ([]Candidate, []Attempt, error) {
	ws := s.graceWatchers(k)
	if k != KindExtension || s.grace < 0 || len(ws) == 0 {
		return s.propose(inv, k, true)
	}
	var timer *time.Timer
	for {
		// Take the change channels before proposing, so a change between
		// the two is not missed.
		changed := make([]<-chan struct{}, len(ws))
		for i, w := range ws {
			changed[i] = w.Changed()
		}
		cands, skipped, err := s.propose(inv, k, true)
		if len(cands) > 0 {
			if timer != nil {
				timer.Stop()
			}
			return cands, skipped, err
		}
		if timer == nil {
			timer = time.NewTimer(s.grace)
			defer timer.Stop()
			s.log.Info("waiting for an extension client to connect", "grace", s.grace,
				"conversationId", inv.ConversationID, "targetClientId", inv.TargetClientID)
		}
		woken, stop := anyClosed(changed)
		select {
		case <-timer.C:
			stop()
			return cands, skipped, err
		case <-ctx.Done():
			stop()
			return cands, skipped, err
		case <-woken:
			stop()
		}
	}
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

func (s *Selector) recordCooldown(c Candidate, inv Invocation, e *Error) {
	// A session that went away (its tab was closed) is a transport error of
	// the command, not of the backend: the browser still answers, so the next
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

func (s *Selector) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}
