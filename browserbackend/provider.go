package browserbackend

import (
	"context"
	"errors"
	"time"
)

// Invocation describes one tool call.
type Invocation struct {
	// ConversationID keys the conversation memo and per-conversation
	// state such as local pages and extension tab pins.
	ConversationID string
	// InterfaceID is the turn's transport interface: "macos",
	// "chrome-extension", "web", "cli", …
	InterfaceID string
	// ActorPrincipalID is who asked; only that actor's hub clients may serve
	// the invocation.
	ActorPrincipalID string
	// AgentID and Roles name the agent that asked; saved logins are
	// granted to an agent id or a role (tools' context_name).
	AgentID string
	Roles   []string
	// Mode is the requested browser_mode; the zero value means ModeAuto.
	Mode Mode
	// TargetClientID, when set, aims the invocation at one client; only kinds
	// whose Descriptor.TargetClients is set serve it.
	TargetClientID string
	// Tab is the tab the call's commands run in; the zero value is the
	// conversation's current tab (a new one of its own when it has none).
	// Providers that declare CapTabs resolve it at Build.
	Tab TabRequest
}

// DefaultActorKey is the key used for an invocation whose actor is unknown,
// e.g. in per-actor cooldown keys.
const DefaultActorKey = "__default__"

// ActorKey returns ActorPrincipalID, or DefaultActorKey when it is empty.
func (inv Invocation) ActorKey() string {
	if inv.ActorPrincipalID == "" {
		return DefaultActorKey
	}
	return inv.ActorPrincipalID
}

// Candidate is one backend that may serve an invocation. Nothing is
// dialled or launched until the selector calls Build.
type Candidate struct {
	// Kind defaults to the proposing provider's Descriptor.Kind.
	Kind Kind
	// Reason says why the candidate was included, e.g.
	// "desktopAuto: macos turn".
	Reason string
	// Build constructs the backend for this invocation. It may dial or launch
	// and must honour ctx. A failure is classified like a send failure; a
	// ClassTransport failure fails over under DefaultPolicy.
	Build func(ctx context.Context) (ScopedClient, error)
	// Probe, optional, checks availability without building, for
	// status reports such as browserbackend/tools.Status; the walk never
	// calls it.
	Probe func(ctx context.Context) error
	// CooldownKey, when set, makes the selector record a cooldown of
	// CooldownFor under this key after any transport failure of the candidate
	// (construction or send, during the walk or after it became sticky).
	// The provider checks Env.Cooldowns for its key when proposing.
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

// Descriptor is everything the core knows about a backend kind; a Provider
// declares it. The selector, the mode parser, the reconnect grace,
// remediation and status reports read only this, so a host app's own kind is
// served exactly like the four reference kinds.
type Descriptor struct {
	// Kind is the backend kind the provider proposes. Required.
	Kind Kind
	// Mode is the canonical browser_mode that pins this kind ("local");
	// empty when callers cannot pin it (host-bridge is reached through auto
	// and the memo only).
	Mode Mode
	// Aliases are further accepted spellings of Mode ("playwright").
	// Matching ignores case and surrounding space.
	Aliases []string
	// Transport labels how the backend is reached, for status reports
	// ("cdp-ws", "playwright").
	Transport string
	// TargetClients is set when the kind serves invocations aimed at one
	// client (Invocation.TargetClientID): such an invocation is pinned to the
	// first kind in provider order that declares it.
	TargetClients bool
	// Grace is set when a pinned invocation of this kind (or one aimed at a
	// target client) may wait, up to Options.Grace, for the provider to
	// propose a candidate. The provider must implement Watcher, whose
	// Changed wakes the wait; without it there is no wait.
	Grace bool
	// Caps is what the kind can do beyond sending commands to its tab;
	// layers above the core ask for a capability, never for a kind.
	Caps Caps
	// Remediation, optional, returns a checklist for a person after an
	// attempt of this kind failed or was skipped. It is called with
	// the attempt (its Code, Detail and Message), must not block, and may
	// return nil when it has nothing to say.
	Remediation func(a Attempt) []string
}

// Provider proposes at most one candidate of its kind for an invocation.
// Propose must not block on the network: probing happens when the
// candidate is built. It returns:
//   - a candidate to try;
//   - an error matching ErrSkip (see Skip and Yield) when it has nothing to
//     offer, with the reason recorded as a candidate_selection attempt;
//   - any other error to fail selection at once (e.g. a target client that is
//     not connected).
//
// Describe is called once, when the provider is given to NewSelector.
// Providers are shared by all invocations and must be safe for concurrent use.
type Provider interface {
	Describe() Descriptor
	Propose(inv Invocation, env Env) (Candidate, error)
}

// Watcher is implemented by providers whose availability changes over time
// (the hub roster). Changed returns a channel that is closed at the next
// change; the selector uses it for the reconnect grace instead of polling.
type Watcher interface {
	Changed() <-chan struct{}
}

// ProviderFunc adapts a function to a Provider described by d.
func ProviderFunc(d Descriptor, f func(inv Invocation, env Env) (Candidate, error)) Provider {
	return providerFunc{d, f}
}

type providerFunc struct {
	d Descriptor
	f func(Invocation, Env) (Candidate, error)
}

func (p providerFunc) Describe() Descriptor { return p.d }
func (p providerFunc) Propose(inv Invocation, env Env) (Candidate, error) {
	return p.f(inv, env)
}

// ErrSkip matches every skip returned by Skip or Yield.
var ErrSkip = errors.New("browserbackend: candidate skipped")

// SkipError is a provider's "nothing to offer" answer.
type SkipError struct {
	// Code is machine-readable, e.g. CodeCooldown, CodeNoClient,
	// CodeNotConfigured.
	Code   string
	Reason string
	// Yielded is set when the provider stood aside for another candidate
	// (host-bridge while an extension of the same actor is connected):
	// nothing is wrong, so status reports offer no remediation for it.
	Yielded bool
}

// Skip returns a *SkipError; Provider.Propose returns it to be skipped.
func Skip(code, reason string) error { return &SkipError{Code: code, Reason: reason} }

// Yield returns a *SkipError with Yielded set: the provider stands aside
// because another candidate serves the invocation instead.
func Yield(code, reason string) error { return &SkipError{Code: code, Reason: reason, Yielded: true} }

func (e *SkipError) Error() string {
	return "browserbackend: candidate skipped: " + e.Code + ": " + e.Reason
}

// Is makes errors.Is(err, ErrSkip) true.
func (e *SkipError) Is(target error) bool { return target == ErrSkip }
