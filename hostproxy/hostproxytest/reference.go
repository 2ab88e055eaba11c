package hostproxytest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/local"
)

// Interface ids of the fake roster's clients (the hub's own).
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
// capability (eventhub.Supports).
func (c HubClient) HostBrowser() bool {
	return eventhub.Supports(c.InterfaceID, eventhub.CapHostBrowser)
}

// Roster is a fake hub roster: the connected clients, and a change channel
// that is closed at every Connect or Disconnect (the shape of the hub's
// Changed). It implements browserbackend.Watcher, so the reference extension
// provider wakes a selector waiting out the reconnect grace. Safe for
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

// Reference builds the four reference providers from the real rules and
// descriptors (hostproxy.ExtensionRule and HostBridgeRule over a fake Roster,
// cdpinspect.Rule over Config, local.Rule), building through a Farm instead of
// a hub or a browser. A host app can test its selector wiring with exactly the
// rules it will run in production, without a hub or a browser.
type Reference struct {
	Roster *Roster
	Config cdpinspect.Config
	Farm   *browserbackendtest.Farm
	// HostBridgeCooldown is the host-bridge window; 0 means the desktop-auto
	// window (Config.DesktopAuto.Cooldown()), as the reference server wires
	// it; negative disables.
	HostBridgeCooldown time.Duration
}

// Providers returns the four reference providers in the reference order:
// extension, host-bridge, cdp-inspect, local.
func (r Reference) Providers() []browserbackend.Provider {
	return []browserbackend.Provider{r.Extension(), r.HostBridge(), r.CDPInspect(), r.Local()}
}

// RefProvider is a reference provider; it implements browserbackend.Watcher
// when it reads a roster.
type RefProvider struct {
	desc    browserbackend.Descriptor
	roster  *Roster
	propose func(browserbackend.Invocation, browserbackend.Env) (browserbackend.Candidate, error)
}

// Describe implements browserbackend.Provider with the real descriptor.
func (p *RefProvider) Describe() browserbackend.Descriptor { return p.desc }

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
			return browserbackendtest.NewBackend(k, nil), nil
		}
		return farm.Build(ctx, k, clientID)
	}
}

// hubRoster renders the fake roster as the hub would list it, in connection
// order, every client equally active.
func (r Reference) hubRoster() []eventhub.ClientInfo {
	if r.Roster == nil {
		return nil
	}
	var out []eventhub.ClientInfo
	for _, c := range r.Roster.Clients() {
		out = append(out, eventhub.ClientInfo{ClientID: c.ID, InterfaceID: c.InterfaceID,
			Capabilities: eventhub.Capabilities(c.InterfaceID), ActorPrincipalID: c.Actor, Healthy: true})
	}
	return out
}

// Extension returns the reference extension provider.
func (r Reference) Extension() *RefProvider {
	return &RefProvider{desc: hostproxy.ExtensionDescriptor, roster: r.Roster,
		propose: func(inv browserbackend.Invocation, _ browserbackend.Env) (browserbackend.Candidate, error) {
			c, client, err := hostproxy.ExtensionRule(r.hubRoster(), inv)
			if err != nil {
				return browserbackend.Candidate{}, err
			}
			c.Build = r.build(browserbackend.KindExtension, client.ClientID)
			return c, nil
		}}
}

// HostBridge returns the reference host-bridge provider.
func (r Reference) HostBridge() *RefProvider {
	cool := r.HostBridgeCooldown
	if cool == 0 {
		cool = r.Config.DesktopAuto.Cooldown()
	}
	return &RefProvider{desc: hostproxy.HostBridgeDescriptor, roster: r.Roster,
		propose: func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
			c, client, err := hostproxy.HostBridgeRule(r.hubRoster(), inv, env, cool)
			if err != nil {
				return browserbackend.Candidate{}, err
			}
			c.Build = r.build(browserbackend.KindHostBridge, client.ClientID)
			return c, nil
		}}
}

// CDPInspect returns the reference cdp-inspect provider.
func (r Reference) CDPInspect() *RefProvider {
	return &RefProvider{desc: cdpinspect.Descriptor(r.Config),
		propose: func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
			c, err := cdpinspect.Rule(r.Config, inv, env)
			if err != nil {
				return browserbackend.Candidate{}, err
			}
			c.Build = r.build(browserbackend.KindCDPInspect, "")
			return c, nil
		}}
}

// Local returns the reference local provider: always a candidate.
func (r Reference) Local() *RefProvider {
	return &RefProvider{desc: local.Descriptor,
		propose: func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
			c := local.Rule(inv, env)
			c.Build = r.build(browserbackend.KindLocal, "")
			return c, nil
		}}
}

// ReferenceDescriptor returns the real descriptor of one of the four
// reference kinds (cdp-inspect's for DefaultConfig), and for any other kind
// a plain descriptor that is pinned by browser_mode equal to the kind's name,
// so a fake of any kind is selectable and pinnable.
func ReferenceDescriptor(k browserbackend.Kind) browserbackend.Descriptor {
	switch k {
	case browserbackend.KindExtension:
		return hostproxy.ExtensionDescriptor
	case browserbackend.KindHostBridge:
		return hostproxy.HostBridgeDescriptor
	case browserbackend.KindCDPInspect:
		return cdpinspect.Descriptor(cdpinspect.DefaultConfig())
	case browserbackend.KindLocal:
		return local.Descriptor
	}
	return browserbackend.Descriptor{Kind: k, Mode: browserbackend.Mode(k), Transport: "fake"}
}
