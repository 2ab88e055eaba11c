// Package browserbackend picks, for every tool call, the browser backend that
// serves it, and fails over between backends on transport errors.
//
// # Pieces
//
//   - ScopedClient is the contract every backend meets: Send one CDP
//     Command {Method, Params, SessionID} and get its raw JSON result or an
//     *Error; Close is idempotent. SendFunc turns a function into one.
//   - Provider proposes at most one Candidate of its kind for an Invocation,
//     or skips with a recorded reason (Skip, Yield). Candidates are built
//     lazily: nothing is dialled or launched before the candidate is tried.
//     ProviderFunc adapts a function. The reference providers live in
//     hostproxy (extension, host-bridge), cdpinspect and local.
//   - Descriptor is everything the core knows of a kind, declared by its
//     provider: the mode and aliases that pin it, its transport label,
//     whether it serves target clients and waits out a reconnect grace, and
//     its remediation. The core has no list of kinds: a host app's own kind
//     is served like the reference ones (see examples/custombackend).
//   - Selector holds the providers in auto order, the failover Policy, the
//     Cooldowns, the conversation Memo, the logger and Hooks. It is long-lived
//     and safe for concurrent use.
//   - Client is the per-invocation ScopedClient from Selector.Client. Its first
//     Send walks the candidates; the first backend that answers is
//     sticky for the rest of the invocation. It is also a cdproto
//     cdp.Session, so typed commands and events run on every backend;
//     Client.Session gives a view bound to one flat CDP session. AsSession
//     does the same for any ScopedClient.
//
// # Rules
//
// Only transport errors (no CDP answer obtained) fail over under
// DefaultPolicy; a protocol error, a cancellation, a closed client or a
// deadline passing after dispatch ends the walk and is returned. NoReplayPolicy
// also refuses to fail over once a command may have reached a browser. A
// pinned Mode (Selector.ParseMode) builds exactly one candidate and, when it
// fails, returns a *SelectionError whose Report lists every attempt and the
// remediation of each kind's descriptor. A candidate with a CooldownKey that
// fails with a transport error is cooled down (desktop-auto cdp-inspect,
// host-bridge per actor). An invocation pinned to a kind whose
// descriptor declares a grace (the extension), or aimed at a target client,
// waits up to Options.Grace for a candidate, woken by the providers'
// Watcher. The whole walk is in walk.go.
//
// # Observability
//
// Selection records go to the injected *slog.Logger with module=cdp-factory
// (the messages are listed in docs/troubleshooting.md); command
// params are never logged. Hooks lets a host app count attempts, failovers and
// sticks without a metrics dependency.
//
// The test kit for host apps is package browserbackendtest.
package browserbackend
