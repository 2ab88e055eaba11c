package hostproxy

import (
	"context"
	"fmt"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// DefaultHostBridgeCooldown is the host-bridge cooldown when
// ProviderOptions.HostBridgeCooldown is zero (30 s).
const DefaultHostBridgeCooldown = 30 * time.Second

// Skip codes of the host-bridge provider. Both are yields
// (browserbackend.Yield): nothing is wrong, another candidate serves.
const (
	// CodeExtensionConnected: a chrome-extension client of the actor is
	// connected, so the extension candidate is proposed instead (the two are
	// never both proposed).
	CodeExtensionConnected = "extension_connected"
	// CodeTargetClient: the invocation is aimed at a target client, which
	// only the extension candidate serves.
	CodeTargetClient = "target_client"
)

// HostBridgeCooldownKey returns the per-actor host-bridge cooldown key; an
// empty actor maps to browserbackend.DefaultActorKey.
func HostBridgeCooldownKey(actor string) string {
	if actor == "" {
		actor = browserbackend.DefaultActorKey
	}
	return "host-bridge:" + actor
}

// HostBridgeClientCooldownKey returns the cooldown key of one desktop client:
// a failing client of an actor that has another connected
// desktop client is cooled down alone, so its healthy sibling keeps serving;
// only the actor's last usable client puts the whole actor on cooldown.
func HostBridgeClientCooldownKey(clientID string) string { return "host-bridge-client:" + clientID }

// ExtensionDescriptor declares the extension kind: pinned by browser_mode
// "extension", serves target clients, waits out the reconnect grace,
// transport label "extension-ws" (the seed's browser_status
// name), and its remediation.
var ExtensionDescriptor = browserbackend.Descriptor{
	Kind:          browserbackend.KindExtension,
	Mode:          "extension",
	Transport:     "extension-ws",
	TargetClients: true,
	Grace:         true,
	Caps:          browserbackend.CapTabs,
	Remediation:   extensionRemediation,
}

// HostBridgeDescriptor declares the host-bridge kind: no mode (it is
// reached through auto and the conversation memo only), transport label
// "host-bridge-sse", and its remediation.
var HostBridgeDescriptor = browserbackend.Descriptor{
	Kind:        browserbackend.KindHostBridge,
	Transport:   "host-bridge-sse",
	Caps:        browserbackend.CapHoldTargets,
	Remediation: hostBridgeRemediation,
}

func extensionRemediation(a browserbackend.Attempt) []string {
	switch a.Code {
	case browserbackend.CodeNoClient, browserbackend.CodeTargetUnavailable:
		return []string{
			"Install the browserchain Chrome extension (load examples/extension unpacked) and pair it with the assistant.",
			"Open the extension popup and check that it shows \"connected\"; press Connect if it is paused.",
		}
	case browserbackend.CodeExtensionRequired:
		return []string{"This operation needs the Chrome extension; pair the extension or use browser_mode \"auto\"."}
	}
	return []string{
		"Ensure the Chrome extension is installed, paired and shows \"connected\" in its popup.",
		"If the popup says \"auth required\", pair it again.",
	}
}

func hostBridgeRemediation(a browserbackend.Attempt) []string {
	return []string{
		"Ensure the desktop app (bridge) is running and connected to the assistant.",
		"Ensure Chrome on the desktop has remote debugging enabled for the bridge (chrome://inspect/#remote-debugging).",
	}
}

// ProviderOptions configures ExtensionProvider and HostBridgeProvider.
type ProviderOptions struct {
	// Backend configures the backends the candidates build.
	Backend BackendOptions
	// HostBridgeCooldown is the per-actor cooldown the selector records after
	// a host-bridge transport failure; 0 means DefaultHostBridgeCooldown,
	// negative disables it.
	HostBridgeCooldown time.Duration
	// MaxTabPins bounds the conversations whose extension tab the extension
	// provider remembers (least recently used dropped first, its tab left
	// open); 0 means DefaultMaxTabPins.
	MaxTabPins int
}

// HubProvider is a browserbackend.Provider whose availability follows the hub
// roster; it implements browserbackend.Watcher so a selector can wait for a
// client to (re)appear without polling.
type HubProvider struct {
	p       *Proxy
	desc    browserbackend.Descriptor
	propose func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error)
	release func(ctx context.Context, conversationID string, close bool) ([]browserbackend.Released, error)
	// list and closeTab serve TabLister; nil for a kind that keeps one tab
	// per conversation here.
	list     func(ctx context.Context, conversationID string) ([]browserbackend.TabInfo, error)
	closeTab func(ctx context.Context, conversationID, tabID string) (browserbackend.Released, error)
}

// Describe implements browserbackend.Provider.
func (h *HubProvider) Describe() browserbackend.Descriptor { return h.desc }

// Propose implements browserbackend.Provider; it reads the live roster and
// never blocks.
func (h *HubProvider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	return h.propose(inv, env)
}

// Changed implements browserbackend.Watcher with the hub's roster changes.
func (h *HubProvider) Changed() <-chan struct{} { return h.p.hub.Changed() }

// ReleaseConversation implements browserbackend.ConversationReleaser: the
// extension provider detaches the conversation's tabs (Vellum.detach) or,
// closing, closes the ones it opened (Vellum.closeTab); an adopted user tab
// stays open. The host-bridge provider holds no tab of its own here.
func (h *HubProvider) ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]browserbackend.Released, error) {
	if h.release == nil {
		return nil, nil
	}
	return h.release(ctx, conversationID, close)
}

// ConversationTabs implements browserbackend.TabLister: on the extension
// the tabs the conversation opened or adopted, current first
// (Vellum.listTabs; popups are not reported by the extension, so they are
// not adopted). The host-bridge provider answers not_supported.
func (h *HubProvider) ConversationTabs(ctx context.Context, conversationID string) ([]browserbackend.TabInfo, error) {
	if h.list == nil {
		return nil, h.oneTab()
	}
	return h.list(ctx, conversationID)
}

// CloseTab implements browserbackend.TabLister: on the extension it closes
// a tab the conversation opened (Vellum.closeTab) or detaches an adopted
// one. The host-bridge provider answers not_supported.
func (h *HubProvider) CloseTab(ctx context.Context, conversationID, tabID string) (browserbackend.Released, error) {
	if h.closeTab == nil {
		return browserbackend.Released{}, h.oneTab()
	}
	return h.closeTab(ctx, conversationID, tabID)
}

func (h *HubProvider) oneTab() error {
	return &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeNotSupported, Backend: h.desc.Kind,
		Message: "this backend keeps one tab per conversation; it cannot list, select or close tabs"}
}

var (
	_ browserbackend.TabLister            = (*HubProvider)(nil)
	_ browserbackend.Provider             = (*HubProvider)(nil)
	_ browserbackend.Watcher              = (*HubProvider)(nil)
	_ browserbackend.ConversationReleaser = (*HubProvider)(nil)
)

// splitClients returns roster's host_browser clients of actor (every
// actor's when actor is empty), in roster order, split into chrome-extension
// clients and desktop bridges.
func splitClients(roster []eventhub.ClientInfo, actor string) (ext, bridges []eventhub.ClientInfo) {
	for _, c := range roster {
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

// ExtensionRule is the rule of the extension candidate, as a pure
// function of the roster (most preferred client first, as Hub.Roster orders
// it): it returns the candidate without Build or Probe and the client it is
// aimed at. It proposes when a chrome-extension client of inv's actor is
// connected (a skip with code no_client otherwise). With inv.TargetClientID
// it proposes exactly that client, or returns a non-skip
// *browserbackend.Error (ClassUnavailable, code target_unavailable) when
// that client is not a connected chrome-extension client of the actor. The
// extension candidate is never cooled down.
func ExtensionRule(roster []eventhub.ClientInfo, inv browserbackend.Invocation) (browserbackend.Candidate, eventhub.ClientInfo, error) {
	ext, _ := splitClients(roster, inv.ActorPrincipalID)
	cand := browserbackend.Candidate{Kind: browserbackend.KindExtension}
	if inv.TargetClientID == "" {
		if len(ext) == 0 {
			return cand, eventhub.ClientInfo{}, browserbackend.Skip(browserbackend.CodeNoClient,
				"no chrome-extension client of this actor is connected")
		}
		cand.Reason = fmt.Sprintf("chrome-extension client %s connected", ext[0].ClientID)
		return cand, ext[0], nil
	}
	for _, c := range ext {
		if c.ClientID == inv.TargetClientID {
			cand.Reason = fmt.Sprintf("target client %s (chrome-extension)", c.ClientID)
			return cand, c, nil
		}
	}
	return cand, eventhub.ClientInfo{}, &browserbackend.Error{
		Class: browserbackend.ClassUnavailable, Code: browserbackend.CodeTargetUnavailable,
		Backend: browserbackend.KindExtension,
		Message: fmt.Sprintf("target client %q is not a connected chrome-extension client of this actor", inv.TargetClientID),
	}
}

// HostBridgeRule is the rule of the host-bridge candidate, as a
// pure function of the roster and the cooldowns: it returns the candidate
// without Build or Probe (but with its cooldown key and cooldown) and the
// desktop client it is aimed at. It yields for an invocation with a target
// client (code target_client) or when a chrome-extension client of the actor
// is connected (code extension_connected); it skips while the actor's
// host-bridge cooldown (HostBridgeCooldownKey) is active (code cooldown), or
// when no desktop host_browser client of the actor is connected (code
// no_client), or when every one of them is cooling down on its own
// (HostBridgeClientCooldownKey; code cooldown).
//
// The candidate is aimed at the actor's most preferred desktop client that
// is not cooling down. Its cooldown key is that client's own key while the
// actor has another usable desktop client, and the actor-wide key when it is
// the last: one misconfigured bridge does not take its healthy sibling down
// with it. cooldown <= 0 disables both cooldowns.
func HostBridgeRule(roster []eventhub.ClientInfo, inv browserbackend.Invocation, env browserbackend.Env, cooldown time.Duration) (browserbackend.Candidate, eventhub.ClientInfo, error) {
	cand := browserbackend.Candidate{Kind: browserbackend.KindHostBridge}
	none := eventhub.ClientInfo{}
	if inv.TargetClientID != "" {
		return cand, none, browserbackend.Yield(CodeTargetClient, "the invocation targets one extension client")
	}
	ext, bridges := splitClients(roster, inv.ActorPrincipalID)
	if len(ext) > 0 {
		return cand, none, browserbackend.Yield(CodeExtensionConnected,
			"a chrome-extension client of this actor is connected; the extension candidate is used instead")
	}
	key := HostBridgeCooldownKey(inv.ActorPrincipalID)
	if env.Cooldowns != nil {
		if left := env.Cooldowns.Remaining(key); left > 0 {
			return cand, none, browserbackend.Skip(browserbackend.CodeCooldown,
				fmt.Sprintf("host-bridge cooldown active for %s (%s left)", key, left.Round(time.Millisecond)))
		}
	}
	if len(bridges) == 0 {
		return cand, none, browserbackend.Skip(browserbackend.CodeNoClient,
			"no host_browser desktop client of this actor is connected")
	}
	usable := bridges
	if env.Cooldowns != nil {
		usable = nil
		for _, b := range bridges {
			if !env.Cooldowns.Active(HostBridgeClientCooldownKey(b.ClientID)) {
				usable = append(usable, b)
			}
		}
	}
	if len(usable) == 0 {
		return cand, none, browserbackend.Skip(browserbackend.CodeCooldown,
			fmt.Sprintf("every desktop client of this actor failed moments ago (%d cooling down)", len(bridges)))
	}
	chosen := usable[0]
	cand.Reason = fmt.Sprintf("desktop client %s (%s) connected, no chrome-extension client",
		chosen.ClientID, chosen.InterfaceID)
	if len(usable) > 1 {
		key = HostBridgeClientCooldownKey(chosen.ClientID)
	}
	cand.CooldownKey, cand.CooldownFor = key, max(cooldown, 0)
	return cand, chosen, nil
}

// ExtensionProvider returns the provider of the extension candidate:
// ExtensionRule over the live roster, building an extension backend
// (NewExtensionBackend) when tried, described by ExtensionDescriptor.
func (p *Proxy) ExtensionProvider(opts ProviderOptions) *HubProvider {
	h := &HubProvider{p: p, desc: ExtensionDescriptor}
	pins := newTabPins(opts.MaxTabPins)
	newSender := func(inv browserbackend.Invocation) browserbackend.ScopedClient {
		return p.NewExtensionBackend(inv, opts.Backend)
	}
	h.release = func(ctx context.Context, conversationID string, close bool) ([]browserbackend.Released, error) {
		return pins.release(ctx, newSender, conversationID, close)
	}
	h.list = func(ctx context.Context, conversationID string) ([]browserbackend.TabInfo, error) {
		return pins.list(ctx, newSender, conversationID)
	}
	h.closeTab = func(ctx context.Context, conversationID, tabID string) (browserbackend.Released, error) {
		return pins.closeTab(ctx, newSender, conversationID, tabID)
	}
	h.propose = func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
		cand, _, err := ExtensionRule(p.rosterOf(inv.ActorPrincipalID), inv)
		if err != nil {
			return browserbackend.Candidate{}, err
		}
		cand.Build = func(ctx context.Context) (browserbackend.ScopedClient, error) {
			b := p.NewExtensionBackend(inv, opts.Backend)
			tb, err := pins.pinTab(ctx, b, inv)
			if err != nil {
				_ = b.Close()
				return nil, err
			}
			return tb, nil
		}
		cand.Probe = func(ctx context.Context) error {
			_, err := p.choose(Req{Method: "Probe", TargetClientID: inv.TargetClientID,
				SourceActor: inv.ActorPrincipalID, Route: RouteExtension, Backend: browserbackend.KindExtension})
			return err
		}
		return cand, nil
	}
	return h
}

// HostBridgeProvider returns the provider of the host-bridge candidate:
// HostBridgeRule over the live roster with ProviderOptions.HostBridgeCooldown,
// building a host-bridge backend (NewHostBridgeBackend) when tried, described
// by HostBridgeDescriptor. The selector records the actor's cooldown after
// every transport failure of the candidate, during the walk and after it
// became sticky, except cdp_session_not_found (one tab went away), so the
// actor's next invocation skips host-bridge.
func (p *Proxy) HostBridgeProvider(opts ProviderOptions) *HubProvider {
	cool := opts.HostBridgeCooldown
	if cool == 0 {
		cool = DefaultHostBridgeCooldown
	}
	h := &HubProvider{p: p, desc: HostBridgeDescriptor}
	h.propose = func(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
		cand, client, err := HostBridgeRule(p.rosterOf(inv.ActorPrincipalID), inv, env, cool)
		if err != nil {
			return browserbackend.Candidate{}, err
		}
		inv.TargetClientID = ""
		cand.Build = func(ctx context.Context) (browserbackend.ScopedClient, error) {
			// The client the rule chose, not merely the most recent.
			return newBridgeBackend(p, inv, client.ClientID, opts.Backend), nil
		}
		cand.Probe = func(ctx context.Context) error {
			_, err := p.choose(Req{Method: "Probe", SourceActor: inv.ActorPrincipalID,
				Route: RouteBridge, Backend: browserbackend.KindHostBridge})
			return err
		}
		return cand, nil
	}
	return h
}
