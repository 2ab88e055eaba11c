package browserbackend

import (
	"context"
	"errors"
	"time"
)

// Invocation describes one tool call (SPEC §0).
type Invocation struct {
	// ConversationID keys the conversation memo (SEL-9) and per-conversation
	// state such as local pages and extension tab pins.
	ConversationID string
	// InterfaceID is the turn's transport interface: "macos",
	// "chrome-extension", "web", "cli", …
	InterfaceID string
	// ActorPrincipalID is who asked; only that actor's hub clients may serve
	// the invocation.
	ActorPrincipalID string
	// Mode is the requested browser_mode; the zero value means ModeAuto.
	Mode Mode
	// TargetClientID, when set, aims the invocation at one extension client.
	TargetClientID string
}

// DefaultActorKey is the cooldown key used for an invocation whose actor is
// unknown (SEL-6).
const DefaultActorKey = "__default__"

// ActorKey returns ActorPrincipalID, or DefaultActorKey when it is empty.
func (inv Invocation) ActorKey() string {
	if inv.ActorPrincipalID == "" {
		return DefaultActorKey
	}
	return inv.ActorPrincipalID
}

// Candidate is one backend that may serve an invocation (SPEC §0). Nothing is
// dialled or launched until the selector calls Build.
type Candidate struct {
	Kind Kind
	// Reason says why the candidate was included, e.g.
	// "desktopAuto: macos turn".
	Reason string
	// Build constructs the backend for this invocation. It may dial or launch
	// and must honour ctx. A failure is classified like a send failure; a
	// ClassTransport failure fails over under DefaultPolicy.
	Build func(ctx context.Context) (ScopedClient, error)
	// Probe, optional, checks availability without building (SEL-13), for
	// status reports such as browserbackend/tools.Status; the walk never
	// calls it.
	Probe func(ctx context.Context) error
	// CooldownKey, when set, makes the selector record a cooldown of
	// CooldownFor under this key after any transport failure of the candidate
	// (construction or send) (SEL-6). Providers check Env.Cooldowns.
	CooldownKey string
	CooldownFor time.Duration
}

// Env is the live state a Provider reads while proposing.
type Env struct {
	// Pinned is true when the invocation pins this provider's kind (a pinned
	// mode, a remembered kind from the memo, or a target client).
	Pinned bool
	// Cooldowns holds the active cooldowns; never nil.
	Cooldowns *Cooldowns
}

// Provider proposes at most one candidate of its Kind for an invocation
// (SEL-2). Propose must not block on the network: probing happens when the
// candidate is built. It returns:
//   - a candidate to try;
//   - an error matching ErrSkip (see Skip) when it has nothing to offer, with
//     the reason recorded as a candidate_selection attempt;
//   - any other error to fail selection at once (e.g. a target client that is
//     not connected).
//
// Providers are shared by all invocations and must be safe for concurrent use.
type Provider interface {
	Kind() Kind
	Propose(inv Invocation, env Env) (Candidate, error)
}

// Watcher is implemented by providers whose availability changes over time
// (the hub roster). Changed returns a channel that is closed at the next
// change; the selector uses it for the extension reconnect grace (SEL-8)
// instead of polling.
type Watcher interface {
	Changed() <-chan struct{}
}

// ProviderFunc adapts a function to a Provider of kind K.
func ProviderFunc(k Kind, f func(inv Invocation, env Env) (Candidate, error)) Provider {
	return providerFunc{k, f}
}

type providerFunc struct {
	k Kind
	f func(Invocation, Env) (Candidate, error)
}

func (p providerFunc) Kind() Kind { return p.k }
func (p providerFunc) Propose(inv Invocation, env Env) (Candidate, error) {
	return p.f(inv, env)
}

// ErrSkip matches every skip returned by Skip.
var ErrSkip = errors.New("browserbackend: candidate skipped")

// SkipError is a provider's "nothing to offer" answer.
type SkipError struct {
	// Code is machine-readable, e.g. CodeCooldown, CodeNoClient,
	// CodeNotConfigured.
	Code   string
	Reason string
}

// Skip returns a *SkipError; Provider.Propose returns it to be skipped.
func Skip(code, reason string) error { return &SkipError{Code: code, Reason: reason} }

func (e *SkipError) Error() string {
	return "browserbackend: candidate skipped: " + e.Code + ": " + e.Reason
}

// Is makes errors.Is(err, ErrSkip) true.
func (e *SkipError) Is(target error) bool { return target == ErrSkip }
