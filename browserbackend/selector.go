package browserbackend

import (
	"context"
	"log/slog"
	"time"
)

// Defaults of Options.
const (
	// DefaultGrace is how long an invocation pinned to a kind that declares
	// Descriptor.Grace (the extension), or aimed at a target client, waits
	// for a candidate to appear.
	DefaultGrace = 3 * time.Second
	// DefaultCommandTimeout bounds a Send whose context has no deadline.
	DefaultCommandTimeout = 30 * time.Second
)

// Hooks lets a host app observe selection without the library depending on a
// metrics or tracing package. Every field is optional. Hooks are
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
	// Providers, in auto order. The reference order is
	// extension, host-bridge, cdp-inspect, local. Their descriptors decide
	// the accepted modes, the target-client kind and the grace.
	Providers []Provider
	// Policy decides failover; zero means DefaultPolicy.
	Policy Policy
	// Logger receives the selection records, with attribute
	// module=cdp-factory; nil means slog.Default().
	Logger *slog.Logger
	// Hooks observe selection.
	Hooks Hooks
	// Cooldowns is shared by invocations; nil means a new one.
	Cooldowns *Cooldowns
	// Memo is the per-conversation memo; nil means a new one.
	Memo *Memo
	// Grace is how long a pinned invocation whose kind declares
	// Descriptor.Grace waits for a candidate; 0 means DefaultGrace, a
	// negative value disables the wait.
	Grace time.Duration
	// CommandTimeout bounds a Send whose ctx has no deadline; 0 means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
}

// Selector builds per-invocation Clients that choose their backend lazily,
// fail over on transport errors and stick, per invocation, to the first
// backend that answers. The walk itself is in walk.go. A Selector is safe for
// concurrent use and is meant to live as long as the host application; it
// holds no goroutines.
type Selector struct {
	providers []Provider
	descs     []Descriptor // descs[i] describes providers[i]
	modes     modeTable
	policy    Policy
	log       *slog.Logger
	hooks     Hooks
	cooldowns *Cooldowns
	memo      *Memo
	grace     time.Duration
	timeout   time.Duration
}

// NewSelector returns a Selector with the options' defaults filled in. It
// calls every provider's Describe once.
func NewSelector(o Options) *Selector {
	s := &Selector{
		providers: append([]Provider(nil), o.Providers...),
		policy:    o.Policy,
		log:       o.Logger,
		hooks:     o.Hooks,
		cooldowns: o.Cooldowns,
		memo:      o.Memo,
		grace:     o.Grace,
		timeout:   o.CommandTimeout,
	}
	for _, p := range s.providers {
		s.descs = append(s.descs, p.Describe())
	}
	s.modes = newModeTable(s.descs)
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
		s.grace = DefaultGrace
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

// Forget drops the conversation's remembered backend; tools call it
// on detach and close.
func (s *Selector) Forget(conversationID string) { s.memo.Forget(conversationID) }

// Descriptors returns the providers' descriptors, one per kind, in provider
// order (the first provider of a kind describes it).
func (s *Selector) Descriptors() []Descriptor {
	var out []Descriptor
	seen := map[Kind]bool{}
	for _, d := range s.descs {
		if !seen[d.Kind] {
			seen[d.Kind] = true
			out = append(out, d)
		}
	}
	return out
}

// Descriptor returns the descriptor of kind k.
func (s *Selector) Descriptor(k Kind) (Descriptor, bool) {
	for _, d := range s.descs {
		if d.Kind == k {
			return d, true
		}
	}
	return Descriptor{}, false
}

// ParseMode turns a caller's browser_mode into a canonical Mode.
// Matching ignores case and surrounding space; the empty string is ModeAuto;
// every provider's Descriptor.Mode and Aliases are accepted. Anything else
// returns an *Error of class ClassPolicy with code CodeInvalidMode whose
// message lists the accepted values and aliases.
func (s *Selector) ParseMode(v string) (Mode, error) {
	e, ok := s.modes.parse(v)
	if !ok {
		return "", s.modes.invalid(v)
	}
	return e.mode, nil
}

// ModeKind returns the kind a pinned mode selects, and false for ModeAuto or
// an unknown mode.
func (s *Selector) ModeKind(m Mode) (Kind, bool) {
	e, ok := s.modes.parse(string(m))
	return e.kind, ok && e.kind != ""
}

// Client returns the per-invocation client. It never blocks: the candidate
// list is built, and the reconnect grace waited, at the first Send.
func (s *Selector) Client(inv Invocation) *Client {
	if inv.Mode == "" {
		inv.Mode = ModeAuto
	}
	return newClient(s, inv)
}

// Plan is the candidate list an invocation would get now, without waiting
// and without building anything.
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
	r, err := s.resolve(inv)
	if err != nil {
		return Plan{Mode: inv.Mode, Err: err}
	}
	return s.propose(inv, r)
}

func (s *Selector) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}
