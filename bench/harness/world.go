package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/local"
)

// Path is one way to send a CDP command to a page: a backend, a peer library
// or the raw floor. Send is called from one goroutine at a time.
type Path struct {
	Name string
	// Note explains what the path includes.
	Note string
	Send func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Inside, when set, returns what the client reported about the latest
	// Send (ms): the time inside chrome.debugger and the time from the
	// request's arrival in the client to its result post.
	Inside func() (debugger, handled float64, ok bool)
}

// Path names, in report order.
const (
	PathRaw          = "raw CDP WebSocket"
	PathInspect      = "cdp-inspect backend"
	PathInspectSel   = "cdp-inspect via Selector/Client"
	PathChromedp     = "chromedp (same browser)"
	PathBridge       = "host-bridge backend"
	PathBridgeSel    = "host-bridge via Selector/Client"
	PathExtension    = "extension backend"
	PathExtensionSel = "extension via Selector/Client"
	PathLocal        = "local (Playwright CDPSession)"
)

// World is everything the measurements share: one Chromium with the
// reference extension loaded (raw CDP, cdp-inspect, chromedp, host-bridge
// and extension all drive it, each in its own tab), the runtime-side server
// with the extension and an in-process desktop bridge connected to it, the
// fixture pages, and one local (Playwright) browser of its own.
type World struct {
	Root     string
	Chromium *Chromium
	Server   *Server
	Fix      *Fixtures
	ExtDir   string
	Local    *local.Browser

	Paths []*Path

	// pageTarget is the tab the CDP paths share (the one cdp-inspect picked).
	pageTarget string
	// fetchClosers release the fetch-only extension (see StartFetchOnly).
	fetchClosers []func()

	closers []func()
}

// NewWorld starts the browsers and servers and connects every path. root is
// the repository root (for examples/extension).
func NewWorld(ctx context.Context, root string) (*World, error) {
	w := &World{Root: root}
	if err := w.start(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *World) start(ctx context.Context) (err error) {
	if w.Fix, err = StartFixtures(); err != nil {
		return err
	}
	w.closers = append(w.closers, w.Fix.Close)
	if w.Server, err = StartServer(); err != nil {
		return err
	}
	w.closers = append(w.closers, w.Server.Close)
	if w.ExtDir, err = CopyExtension(w.Root, w.Server.URL); err != nil {
		return err
	}
	w.closers = append(w.closers, func() { os.RemoveAll(w.ExtDir) })
	if w.Chromium, err = StartChromium(ctx, w.ExtDir); err != nil {
		return err
	}
	w.closers = append(w.closers, w.Chromium.Close)
	w.Local = local.New(local.Options{Logger: discard})
	w.closers = append(w.closers, func() { w.Local.Close() })

	ctx, cancel := context.WithTimeout(ctx, 2*stepTimeout)
	defer cancel()
	if _, err := w.Server.WaitClient(ctx, wire.InterfaceChromeExtension); err != nil {
		return err
	}
	stop, err := w.Server.StartBridge("bench-bridge", w.Chromium.WSURL)
	if err != nil {
		return err
	}
	w.closers = append(w.closers, stop)
	if _, err := w.Server.WaitClient(ctx, wire.InterfaceMacOS); err != nil {
		return err
	}
	for _, mk := range []func(context.Context) (*Path, error){
		w.inspectPath, w.rawPath, w.inspectSelPath, w.chromedpPath,
		w.bridgePath, w.bridgeSelPath, w.extensionPath, w.extensionSelPath, w.localPath,
	} {
		p, err := mk(ctx)
		if err != nil {
			return err
		}
		// First command: attach, open the page, warm every cache.
		if _, err := p.Send(ctx, "Runtime.evaluate", EvalParams); err != nil {
			return fmt.Errorf("benchreport: %s: first command: %w", p.Name, err)
		}
		w.Paths = append(w.Paths, p)
	}
	return nil
}

// Close releases everything NewWorld started, in reverse order.
func (w *World) Close() {
	w.CloseFetchOnly()
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
	w.closers = nil
}

// Path returns the path called name.
func (w *World) Path(name string) *Path {
	for _, p := range w.Paths {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// EvalParams are the params of the round-trip figure: Runtime.evaluate 1+1.
var EvalParams = json.RawMessage(`{"expression":"1+1","returnByValue":true}`)

func (w *World) rawPath(ctx context.Context) (*Path, error) {
	r, err := DialRaw(ctx, w.Chromium.WSURL)
	if err != nil {
		return nil, err
	}
	w.closers = append(w.closers, r.Close)
	if err := r.Attach(ctx, w.pageTarget); err != nil {
		return nil, err
	}
	return &Path{Name: PathRaw, Note: "bare coder/websocket, reply read on the caller's goroutine",
		Send: r.Send}, nil
}

// InspectConfig is cdp-inspect enabled for every invocation.
func InspectConfig() cdpinspect.Config {
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = true
	return cfg
}

func (w *World) inspectPath(ctx context.Context) (*Path, error) {
	be, err := cdpinspect.Dial(ctx, InspectConfig(), cdpinspect.WithWebSocketURL(w.Chromium.WSURL),
		cdpinspect.WithLogger(discard))
	if err != nil {
		return nil, err
	}
	w.closers = append(w.closers, func() { be.Close() })
	w.pageTarget = be.TargetID()
	return &Path{Name: PathInspect, Note: "cdpinspect.Backend.Send",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return be.Send(ctx, bb.Command{Method: m, Params: p})
		}}, nil
}

// clientPath wraps a selector Client.
func (w *World) clientPath(name, note string, sel *bb.Selector, inv bb.Invocation) *Path {
	c := sel.Client(inv)
	w.closers = append(w.closers, func() { c.Close() })
	return &Path{Name: name, Note: note,
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return c.Send(ctx, bb.Command{Method: m, Params: p})
		}}
}

func (w *World) inspectSelPath(ctx context.Context) (*Path, error) {
	p := cdpinspect.NewProvider(InspectConfig(), cdpinspect.WithWebSocketURL(w.Chromium.WSURL), cdpinspect.WithLogger(discard))
	w.closers = append(w.closers, func() { p.Close() })
	sel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{p}})
	return w.clientPath(PathInspectSel, "sticky Client.Send over a cdp-inspect candidate",
		sel, bb.Invocation{ConversationID: "bench-inspect", InterfaceID: wire.InterfaceCLI}), nil
}

func (w *World) chromedpPath(ctx context.Context) (*Path, error) {
	actx, acancel := remote.NewAllocator(context.Background(), w.Chromium.WSURL)
	cctx, ccancel := chromedp.NewContext(actx, chromedp.WithTargetID(target.ID(w.pageTarget)), chromedp.WithDetachOnCancel())
	w.closers = append(w.closers, func() { ccancel(); acancel() })
	var target *chromedp.Target
	if _, err := chromedp.Run(cctx, func(ctx context.Context, t *chromedp.Target) (struct{}, error) {
		target = t
		return struct{}{}, nil
	}); err != nil {
		return nil, err
	}
	return &Path{Name: PathChromedp, Note: "chromedp v0.23 Target.Call via the remote allocator",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			var res jsonv2.Value
			err := target.Call(ctx, m, jsonv2.Value(p), &res)
			return json.RawMessage(res), err
		}}, nil
}

func (w *World) bridgePath(ctx context.Context) (*Path, error) {
	be := w.Server.Proxy.NewHostBridgeBackend(w.Server.BridgeInvocation("bench-bridge"),
		hostproxyOpts)
	w.closers = append(w.closers, func() { be.Close() })
	return &Path{Name: PathBridge, Note: "proxy → hub → SSE → hostproxy/bridge (in-process) → CDP → POST result",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return be.Send(ctx, bb.Command{Method: m, Params: p})
		}}, nil
}

func (w *World) bridgeSelPath(ctx context.Context) (*Path, error) {
	sel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{
		w.Server.Proxy.HostBridgeProvider(hostproxyProviderOpts),
	}})
	return w.clientPath(PathBridgeSel, "sticky Client.Send over the host-bridge candidate",
		sel, w.Server.BridgeInvocation("bench-bridge-sel")), nil
}

func (w *World) extensionPath(ctx context.Context) (*Path, error) {
	be := w.Server.Proxy.NewExtensionBackend(w.Server.Invocation("bench-ext", wire.InterfaceMacOS), hostproxyOpts)
	w.closers = append(w.closers, func() { be.Close() })
	p, _ := json.Marshal(map[string]any{"url": w.Fix.URL("/page"), "active": true})
	if _, err := be.Send(ctx, bb.Command{Method: "Vellum.createTab", Params: p}); err != nil {
		return nil, err
	}
	s := w.Server
	return &Path{Name: PathExtension, Note: "proxy → hub → SSE → MV3 worker → chrome.debugger → result socket",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return be.Send(ctx, bb.Command{Method: m, Params: p})
		},
		Inside: func() (float64, float64, bool) { return s.Timing(s.LastRequestID()) },
	}, nil
}

func (w *World) extensionSelPath(ctx context.Context) (*Path, error) {
	sel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{
		w.Server.Proxy.ExtensionProvider(hostproxyProviderOpts),
	}})
	p := w.clientPath(PathExtensionSel, "sticky Client.Send over the extension candidate",
		sel, w.Server.Invocation("bench-ext-sel", wire.InterfaceMacOS))
	s := w.Server
	p.Inside = func() (float64, float64, bool) { return s.Timing(s.LastRequestID()) }
	params, _ := json.Marshal(map[string]any{"url": w.Fix.URL("/page"), "active": true})
	if _, err := p.Send(ctx, "Vellum.createTab", params); err != nil {
		return nil, err
	}
	return p, nil
}

func (w *World) localPath(ctx context.Context) (*Path, error) {
	c := w.Local.Client("bench-local")
	w.closers = append(w.closers, func() { c.Close() })
	if err := c.Open(ctx); err != nil {
		return nil, err
	}
	return &Path{Name: PathLocal, Note: "local.Client.Send (playwright-go → Node driver → its own Chromium)",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return c.Send(ctx, bb.Command{Method: m, Params: p})
		}}, nil
}

// Backend and provider options of the hub paths: the library defaults.
var (
	hostproxyOpts         = hostproxy.BackendOptions{}
	hostproxyProviderOpts = hostproxy.ProviderOptions{}
)
