package browserbackendtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/browserchain/browserchain/wire"

	"github.com/browserchain/browserchain/browserbackend"
)

// Interface ids used by the reference providers (SPEC §0, HUB-2).
const (
	InterfaceChromeExtension = wire.InterfaceChromeExtension
	InterfaceMacOS           = wire.InterfaceMacOS
	InterfaceWindows         = wire.InterfaceWindows
)

// HubClient is one client on a fake hub roster: a Chrome extension install or
// a desktop app, identified by its client id, the interface it speaks
// through and the actor it belongs to.
type HubClient struct {
	ID          string
	InterfaceID string
	Actor       string
}

// HostBrowser reports whether the client's interface grants the host_browser
// capability (HUB-2): chrome-extension, macos and windows do; web, cli and
// unknown interfaces do not.
func (c HubClient) HostBrowser() bool {
	switch c.InterfaceID {
	case InterfaceChromeExtension, InterfaceMacOS, InterfaceWindows:
		return true
	}
	return false
}

// Roster is a fake hub roster: the connected clients, and a change channel
// that is closed at every Connect or Disconnect (the shape of the hub's
// Changed). It implements browserbackend.Watcher, so the reference extension
// provider wakes a selector waiting out the reconnect grace (SEL-8). Safe for
// concurrent use; use NewRoster.
type Roster struct {
	mu      sync.Mutex
	clients []HubClient
	changed chan struct{}
}

// NewRoster returns a roster holding clients.
func NewRoster(clients ...HubClient) *Roster {
	return &Roster{clients: slices.Clone(clients), changed: make(chan struct{})}
}

// Connect adds c, replacing a client with the same id, and signals a change.
func (r *Roster) Connect(c HubClient) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients = slices.DeleteFunc(r.clients, func(x HubClient) bool { return x.ID == c.ID })
	r.clients = append(r.clients, c)
	r.signalLocked()
}

// Disconnect removes the client with id and signals a change; false when no
// such client was connected.
func (r *Roster) Disconnect(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.clients)
	r.clients = slices.DeleteFunc(r.clients, func(x HubClient) bool { return x.ID == id })
	if len(r.clients) == n {
		return false
	}
	r.signalLocked()
	return true
}

func (r *Roster) signalLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Clients returns the connected clients in connection order.
func (r *Roster) Clients() []HubClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.clients)
}

// Changed implements browserbackend.Watcher: the channel closes at the next
// Connect or Disconnect.
func (r *Roster) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// actorClients splits actor's host_browser clients into extensions and
// desktop bridges. Only clients whose Actor equals actor count (an unknown,
// empty actor sees only clients with no actor).
func (r *Roster) actorClients(actor string) (ext, bridges []HubClient) {
	if r == nil {
		return nil, nil
	}
	for _, c := range r.Clients() {
		if c.Actor != actor || !c.HostBrowser() {
			continue
		}
		if c.InterfaceID == InterfaceChromeExtension {
			ext = append(ext, c)
		} else {
			bridges = append(bridges, c)
		}
	}
	return ext, bridges
}

// BuildRecord is one candidate build a Farm performed.
type BuildRecord struct {
	Kind browserbackend.Kind
	// ClientID is the hub client the candidate was aimed at (extension and
	// host-bridge), empty otherwise.
	ClientID string
}

// Farm builds the backends of the reference providers and records every
// build. By default each build returns a fresh NewBackend(kind, nil); OnBuild
// scripts a kind (return an error to fail construction, or a Backend with
// FailOn to fail at send). Safe for concurrent use; the zero value is ready.
type Farm struct {
	mu       sync.Mutex
	on       map[browserbackend.Kind]func(clientID string) (*Backend, error)
	builds   []BuildRecord
	backends []*Backend
}

// OnBuild makes every later build of kind k call f. It returns f's farm for
// chaining.
func (f *Farm) OnBuild(k browserbackend.Kind, fn func(clientID string) (*Backend, error)) *Farm {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on == nil {
		f.on = make(map[browserbackend.Kind]func(string) (*Backend, error))
	}
	f.on[k] = fn
	return f
}

// FailBuild makes every later build of kind k fail with err.
func (f *Farm) FailBuild(k browserbackend.Kind, err error) *Farm {
	return f.OnBuild(k, func(string) (*Backend, error) { return nil, err })
}

// FailSend makes every backend of kind k built later fail its first command
// with err.
func (f *Farm) FailSend(k browserbackend.Kind, err error) *Farm {
	return f.OnBuild(k, func(string) (*Backend, error) { return NewBackend(k, nil).FailOn(1, err), nil })
}

// Build constructs a backend of kind k aimed at clientID.
func (f *Farm) Build(ctx context.Context, k browserbackend.Kind, clientID string) (browserbackend.ScopedClient, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.builds = append(f.builds, BuildRecord{Kind: k, ClientID: clientID})
	fn := f.on[k]
	f.mu.Unlock()
	var (
		b   *Backend
		err error
	)
	if fn != nil {
		b, err = fn(clientID)
	} else {
		b = NewBackend(k, nil)
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.backends = append(f.backends, b)
	f.mu.Unlock()
	return b, nil
}

// Builds returns the builds performed so far, in order.
func (f *Farm) Builds() []BuildRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.builds)
}

// BuiltKinds returns the kinds of the builds performed so far, in order.
func (f *Farm) BuiltKinds() []browserbackend.Kind {
	var out []browserbackend.Kind
	for _, b := range f.Builds() {
		out = append(out, b.Kind)
	}
	return out
}

// Backends returns the backends built so far (successful builds only), in
// order.
func (f *Farm) Backends() []*Backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.backends)
}

// Candidate reasons of the reference providers.
const (
	ReasonDesktopAuto = "desktopAuto: macos turn"
	ReasonConfigured  = "cdpInspect.enabled"
	ReasonPinned      = "pinned"
	ReasonLocal       = "always last"
)

// Skip codes of the reference providers besides the library's own.
const (
	CodeExtensionConnected = "extension_connected"
	CodeTargetClient       = "target_client"
)

// Reference builds providers that follow the SEL-3 rules against a fake
// Roster, building through a Farm. They are reference-like stand-ins for the
// real providers (hostproxy, cdpinspect, local), so a host app can test its
// selector wiring without a hub or a browser:
//
//   - extension: a chrome-extension client of the invoking actor is
//     connected (skip no_client otherwise); with a target client id, exactly
//     that client, or a non-skip ClassUnavailable/no_client error. Never
//     cooled down. Implements browserbackend.Watcher through the roster.
//   - host-bridge: no chrome-extension client of the actor is connected
//     (skip extension_connected otherwise), the actor's host-bridge cooldown
//     is not active (skip cooldown), and a desktop host_browser client of the
//     actor is connected (skip no_client). The candidate carries the per-actor
//     cooldown key and HostBridgeCooldown.
//   - cdp-inspect: pinned, or Config.CDPInspect.Enabled (no cooldown key), or
//     a macos turn with DesktopAuto.Enabled and the desktop-auto cooldown not
//     active (reason "desktopAuto: …", cooldown key CooldownDesktopAuto for
//     DesktopAuto.Cooldown()); skip not_configured or cooldown otherwise.
//   - local: always.
type Reference struct {
	Roster *Roster
	Config browserbackend.Config
	Farm   *Farm
	// HostBridgeCooldown is the host-bridge window; 0 means the desktop-auto
	// window (Config.CDPInspect.DesktopAuto.Cooldown()), negative disables.
	HostBridgeCooldown time.Duration
}

// Providers returns the four reference providers in the SEL-3 order:
// extension, host-bridge, cdp-inspect, local.
func (r Reference) Providers() []browserbackend.Provider {
	return []browserbackend.Provider{r.Extension(), r.HostBridge(), r.CDPInspect(), r.Local()}
}

// RefProvider is a reference provider; it implements browserbackend.Watcher
// when it reads a roster.
type RefProvider struct {
	kind    browserbackend.Kind
	roster  *Roster
	propose func(browserbackend.Invocation, browserbackend.Env) (browserbackend.Candidate, error)
}

// Kind implements browserbackend.Provider.
func (p *RefProvider) Kind() browserbackend.Kind { return p.kind }

// Propose implements browserbackend.Provider.
func (p *RefProvider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	return p.propose(inv, env)
}

// Changed implements browserbackend.Watcher; nil (never closes) without a
// roster.
func (p *RefProvider) Changed() <-chan struct{} {
	if p.roster == nil {
		return nil
	}
	return p.roster.Changed()
}

func (r Reference) build(k browserbackend.Kind, clientID string) func(context.Context) (browserbackend.ScopedClient, error) {
	farm := r.Farm
	return func(ctx context.Context) (browserbackend.ScopedClient, error) {
		if farm == nil {
			return NewBackend(k, nil), nil
		}
		return farm.Build(ctx, k, clientID)
	}
}

// Extension returns the reference extension provider.
func (r Reference) Extension() *RefProvider {
	return &RefProvider{kind: browserbackend.KindExtension, roster: r.Roster,
		propose: func(inv browserbackend.Invocation, _ browserbackend.Env) (browserbackend.Candidate, error) {
			ext, _ := r.Roster.actorClients(inv.ActorPrincipalID)
			if inv.TargetClientID != "" {
				for _, c := range ext {
					if c.ID == inv.TargetClientID {
						return browserbackend.Candidate{Kind: browserbackend.KindExtension,
							Reason: "target client " + c.ID, Build: r.build(browserbackend.KindExtension, c.ID)}, nil
					}
				}
				return browserbackend.Candidate{}, &browserbackend.Error{Class: browserbackend.ClassUnavailable,
					Code: browserbackend.CodeNoClient, Backend: browserbackend.KindExtension,
					Message: fmt.Sprintf("target client %q is not a connected chrome-extension client of this actor", inv.TargetClientID)}
			}
			if len(ext) == 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient,
					"no chrome-extension client of this actor is connected")
			}
			return browserbackend.Candidate{Kind: browserbackend.KindExtension,
				Reason: "chrome-extension client " + ext[0].ID + " connected",
				Build:  r.build(browserbackend.KindExtension, ext[0].ID)}, nil
		}}
}

// HostBridge returns the reference host-bridge provider.
func (r Reference) HostBridge() *RefProvider {
	cool := r.HostBridgeCooldown
	if cool == 0 {
		cool = r.Config.CDPInspect.DesktopAuto.Cooldown()
	}
	return &RefProvider{kind: browserbackend.KindHostBridge, roster: r.Roster,
		propose: func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
			if inv.TargetClientID != "" {
				return browserbackend.Candidate{}, browserbackend.Skip(CodeTargetClient, "the invocation targets one extension client")
			}
			ext, bridges := r.Roster.actorClients(inv.ActorPrincipalID)
			if len(ext) > 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(CodeExtensionConnected,
					"a chrome-extension client of this actor is connected")
			}
			key := browserbackend.HostBridgeCooldownKey(inv.ActorPrincipalID)
			if left := env.Cooldowns.Remaining(key); left > 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeCooldown,
					fmt.Sprintf("host-bridge cooldown active for %s (%s left)", key, left))
			}
			if len(bridges) == 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient,
					"no desktop host_browser client of this actor is connected")
			}
			return browserbackend.Candidate{Kind: browserbackend.KindHostBridge,
				Reason:      "desktop client " + bridges[0].ID + " connected, no chrome-extension client",
				Build:       r.build(browserbackend.KindHostBridge, bridges[0].ID),
				CooldownKey: key, CooldownFor: max(cool, 0)}, nil
		}}
}

// CDPInspect returns the reference cdp-inspect provider.
func (r Reference) CDPInspect() *RefProvider {
	ci := r.Config.CDPInspect
	return &RefProvider{kind: browserbackend.KindCDPInspect,
		propose: func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
			c := browserbackend.Candidate{Kind: browserbackend.KindCDPInspect,
				Build: r.build(browserbackend.KindCDPInspect, "")}
			switch {
			case env.Pinned:
				c.Reason = ReasonPinned
			case ci.Enabled:
				c.Reason = ReasonConfigured
			case inv.InterfaceID == InterfaceMacOS && ci.DesktopAuto.Enabled:
				if left := env.Cooldowns.Remaining(browserbackend.CooldownDesktopAuto); left > 0 {
					return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeCooldown,
						fmt.Sprintf("desktop-auto cdp-inspect cooldown active (%s left)", left))
				}
				c.Reason = ReasonDesktopAuto
				c.CooldownKey = browserbackend.CooldownDesktopAuto
				c.CooldownFor = ci.DesktopAuto.Cooldown()
			default:
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNotConfigured,
					"cdp-inspect is off and the turn is not a macos desktop-auto turn")
			}
			return c, nil
		}}
}

// Local returns the reference local provider: always a candidate.
func (r Reference) Local() *RefProvider {
	return &RefProvider{kind: browserbackend.KindLocal,
		propose: func(browserbackend.Invocation, browserbackend.Env) (browserbackend.Candidate, error) {
			return browserbackend.Candidate{Kind: browserbackend.KindLocal, Reason: ReasonLocal,
				Build: r.build(browserbackend.KindLocal, "")}, nil
		}}
}
