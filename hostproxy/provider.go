package hostproxy

import (
	"context"
	"fmt"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// DefaultHostBridgeCooldown is the host-bridge cooldown when
// ProviderOptions.HostBridgeCooldown is zero: the desktopAuto default of
// SEL-12 (30 s).
const DefaultHostBridgeCooldown = 30 * time.Second

// CodeExtensionConnected is the skip code of the host-bridge provider when a
// chrome-extension client of the actor is connected (the extension candidate
// is proposed instead; SEL-3 never lists both).
const CodeExtensionConnected = "extension_connected"

// CodeTargetClient is the skip code of the host-bridge provider for an
// invocation aimed at a target client (SEL-3: only the extension candidate).
const CodeTargetClient = "target_client"

// ProviderOptions configures ExtensionProvider and HostBridgeProvider.
type ProviderOptions struct {
	// Backend configures the backends the candidates build.
	Backend BackendOptions
	// HostBridgeCooldown is the per-actor cooldown the selector records after
	// a host-bridge transport failure (SEL-6b); 0 means
	// DefaultHostBridgeCooldown, negative disables it.
	HostBridgeCooldown time.Duration
}

// HubProvider is a browserbackend.Provider whose availability follows the hub
// roster; it implements browserbackend.Watcher so a selector can wait for a
// client to (re)appear without polling (SEL-8).
type HubProvider struct {
	p       *Proxy
	kind    browserbackend.Kind
	opts    ProviderOptions
	propose func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error)
}

// Kind implements browserbackend.Provider.
func (h *HubProvider) Kind() browserbackend.Kind { return h.kind }

// Propose implements browserbackend.Provider; it reads the live roster and
// never blocks.
func (h *HubProvider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	return h.propose(inv, env)
}

// Changed implements browserbackend.Watcher with the hub's roster changes.
func (h *HubProvider) Changed() <-chan struct{} { return h.p.hub.Changed() }

var (
	_ browserbackend.Provider = (*HubProvider)(nil)
	_ browserbackend.Watcher  = (*HubProvider)(nil)
)

// actorClients returns the connected host_browser clients of actor (every
// actor's when actor is empty), most recently active first, split into
// chrome-extension clients and desktop bridges.
func (p *Proxy) actorClients(actor string) (ext, bridges []eventhub.ClientInfo) {
	for _, c := range p.hub.Roster() {
		if !c.Has(eventhub.CapHostBrowser) || (actor != "" && c.ActorPrincipalID != actor) {
			continue
		}
		if isExtension(c) {
			ext = append(ext, c)
		} else {
			bridges = append(bridges, c)
		}
	}
	return ext, bridges
}

// ExtensionProvider returns the SEL-3 provider of the extension candidate. It
// proposes when a chrome-extension client of the invocation's actor is
// connected (skip with code no_client otherwise). With inv.TargetClientID it
// proposes exactly one candidate aimed at that client, or returns a
// non-skip *browserbackend.Error (ClassUnavailable, code no_client) when that
// client is not a connected chrome-extension client of the actor. The
// extension candidate is never cooled down.
func (p *Proxy) ExtensionProvider(opts ProviderOptions) *HubProvider {
	h := &HubProvider{p: p, kind: browserbackend.KindExtension, opts: opts}
	h.propose = func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
		ext, _ := p.actorClients(inv.ActorPrincipalID)
		var reason string
		if inv.TargetClientID != "" {
			for _, c := range ext {
				if c.ClientID == inv.TargetClientID {
					reason = fmt.Sprintf("target client %s (chrome-extension)", c.ClientID)
				}
			}
			if reason == "" {
				return browserbackend.Candidate{}, &browserbackend.Error{
					Class: browserbackend.ClassUnavailable, Code: browserbackend.CodeNoClient,
					Backend: browserbackend.KindExtension,
					Message: fmt.Sprintf("target client %q is not a connected chrome-extension client of this actor", inv.TargetClientID),
				}
			}
		} else {
			if len(ext) == 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient,
					"no chrome-extension client of this actor is connected")
			}
			reason = fmt.Sprintf("chrome-extension client %s connected", ext[0].ClientID)
		}
		return browserbackend.Candidate{
			Kind:   browserbackend.KindExtension,
			Reason: reason,
			Build: func(ctx context.Context) (browserbackend.ScopedClient, error) {
				return p.NewExtensionBackend(inv, h.opts.Backend), nil
			},
			Probe: func(ctx context.Context) error {
				_, err := p.Choose(Req{Method: "Probe", TargetClientID: inv.TargetClientID,
					SourceActor: inv.ActorPrincipalID, Route: RouteExtension, Backend: browserbackend.KindExtension})
				return err
			},
		}, nil
	}
	return h
}

// HostBridgeProvider returns the SEL-3 provider of the host-bridge candidate.
// It skips an invocation with a target client (code target_client), or when a
// chrome-extension client of the actor is connected (code
// extension_connected), or while the actor's host-bridge cooldown
// (browserbackend.HostBridgeCooldownKey) is active in env.Cooldowns (code
// cooldown), or when no desktop host_browser client of the actor is connected
// (code no_client). Its candidate carries that cooldown key and
// ProviderOptions.HostBridgeCooldown, so the selector records the cooldown
// after every transport failure of the candidate, during the walk and after
// it became sticky, except cdp_session_not_found (one tab went away), and the
// actor's next invocation skips host-bridge (SEL-6b).
func (p *Proxy) HostBridgeProvider(opts ProviderOptions) *HubProvider {
	cool := opts.HostBridgeCooldown
	switch {
	case cool == 0:
		cool = DefaultHostBridgeCooldown
	case cool < 0:
		cool = 0
	}
	h := &HubProvider{p: p, kind: browserbackend.KindHostBridge, opts: opts}
	h.propose = func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
		if inv.TargetClientID != "" {
			return browserbackend.Candidate{}, browserbackend.Skip(CodeTargetClient,
				"the invocation targets one extension client")
		}
		ext, bridges := p.actorClients(inv.ActorPrincipalID)
		if len(ext) > 0 {
			return browserbackend.Candidate{}, browserbackend.Skip(CodeExtensionConnected,
				"a chrome-extension client of this actor is connected; the extension candidate is used instead")
		}
		key := browserbackend.HostBridgeCooldownKey(inv.ActorPrincipalID)
		if env.Cooldowns != nil {
			if left := env.Cooldowns.Remaining(key); left > 0 {
				return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeCooldown,
					fmt.Sprintf("host-bridge cooldown active for %s (%s left)", key, left.Round(time.Millisecond)))
			}
		}
		if len(bridges) == 0 {
			return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient,
				"no host_browser desktop client of this actor is connected")
		}
		inv.TargetClientID = ""
		return browserbackend.Candidate{
			Kind: browserbackend.KindHostBridge,
			Reason: fmt.Sprintf("desktop client %s (%s) connected, no chrome-extension client",
				bridges[0].ClientID, bridges[0].InterfaceID),
			// The selector records the actor's cooldown (CooldownKey) on
			// every transport failure, also after the backend became sticky.
			Build: func(ctx context.Context) (browserbackend.ScopedClient, error) {
				return p.NewHostBridgeBackend(inv, h.opts.Backend), nil
			},
			Probe: func(ctx context.Context) error {
				_, err := p.Choose(Req{Method: "Probe", SourceActor: inv.ActorPrincipalID,
					Route: RouteBridge, Backend: browserbackend.KindHostBridge})
				return err
			},
			CooldownKey: key,
			CooldownFor: cool,
		}, nil
	}
	return h
}
