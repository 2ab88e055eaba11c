package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/local"
)

// ColdResult is the time to the first answer of one way of starting.
type ColdResult struct {
	Name string
	// What the time includes.
	Note string
	// Baseline names the row this one is compared with ("" for none).
	Baseline string
	D        Durations
	// Parts, when set, splits each sample (e.g. browser start vs first
	// answer), label → durations.
	Parts map[string]Durations
}

// Cold-start rows, in report order.
const (
	ColdRaw          = "raw CDP: dial + attach + evaluate"
	ColdInspect      = "cdp-inspect: new invocation (discover, dial, attach)"
	ColdChromedp     = "chromedp: remote allocator + attach + evaluate"
	ColdBridge       = "host-bridge: bridge start → subscribed → first answer"
	ColdBridgeWarm   = "host-bridge: new invocation on a connected bridge"
	ColdExtension    = "extension: browser start → paired/subscribed → first answer"
	ColdExtNewConv   = "extension: new conversation on a connected extension"
	ColdExtSameConv  = "extension: new invocation, same conversation"
	ColdLocal        = "local: first invocation (driver + browser launch)"
	ColdLocalSame    = "local warm: second invocation, same conversation"
	ColdLocalNewConv = "local warm: new conversation (new page)"
)

// localSpareGap spaces the new-conversation samples of local.
const localSpareGap = 750 * time.Millisecond

// ColdCounts says how many samples each kind of cold start takes.
type ColdCounts struct {
	Fast      int // raw, cdp-inspect, chromedp, warm rows
	Bridge    int
	Extension int
	Local     int
}

func evalOnce(ctx context.Context, c bb.ScopedClient) error {
	_, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: EvalParams})
	return err
}

// MeasureColdStart measures cold starts per backend and the warm second
// invocation of local (and the other warm figures that explain them).
func MeasureColdStart(ctx context.Context, w *World, n ColdCounts) ([]ColdResult, error) {
	var out []ColdResult
	add := func(r ColdResult) { out = append(out, r) }
	// timeN runs f count times; f returns the time from its start to the
	// first answer (closing what it opened comes after and is not timed).
	timeN := func(count int, f func(i int) (time.Duration, error)) (Durations, error) {
		var d Durations
		for i := range count {
			di, err := f(i)
			if err != nil {
				return nil, err
			}
			d = append(d, di)
		}
		return d, nil
	}
	// answer sends the first command on c and returns the time since t0.
	answer := func(t0 time.Time, c bb.ScopedClient) (time.Duration, error) {
		err := evalOnce(ctx, c)
		return time.Since(t0), err
	}

	// raw CDP.
	Progress("cold start: raw")
	d, err := timeN(n.Fast, func(int) (time.Duration, error) {
		t0 := time.Now()
		r, err := DialRaw(ctx, w.Chromium.WSURL)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		if err := r.AttachFirstPage(ctx); err != nil {
			return 0, err
		}
		_, err = r.Send(ctx, "Runtime.evaluate", EvalParams)
		return time.Since(t0), err
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold raw: %w", err)
	}
	add(ColdResult{Name: ColdRaw, Note: "browser already running", D: d})

	// cdp-inspect: discovery through the profile's DevToolsActivePort, as
	// for a user's Chrome; every invocation dials afresh (by design).
	Progress("cold start: cdp-inspect")
	coldP := cdpinspect.NewProvider(InspectConfig(), cdpinspect.WithUserDataDirs(w.Chromium.UserDataDir), cdpinspect.WithLogger(discard))
	defer coldP.Close()
	sel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{coldP}})
	d, err = timeN(n.Fast, func(i int) (time.Duration, error) {
		t0 := time.Now()
		c := sel.Client(bb.Invocation{ConversationID: fmt.Sprintf("cold-%d", i), InterfaceID: wire.InterfaceCLI})
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold cdp-inspect: %w", err)
	}
	add(ColdResult{Name: ColdInspect, Note: "Selector → DevToolsActivePort → WebSocket → attach → evaluate", Baseline: ColdRaw, D: d})

	Progress("cold start: chromedp")
	d, err = timeN(n.Fast, func(int) (time.Duration, error) {
		t0 := time.Now()
		actx, acancel := remote.NewAllocator(context.Background(), w.Chromium.WSURL)
		defer acancel()
		cctx, ccancel := chromedp.NewContext(actx, chromedp.WithTargetID(target.ID(w.pageTarget)), chromedp.WithDetachOnCancel())
		defer ccancel()
		_, err := chromedp.Run(cctx, func(ctx context.Context, t *chromedp.Target) (struct{}, error) {
			var res jsonv2.Value
			return struct{}{}, t.Call(ctx, "Runtime.evaluate", jsonv2.Value(EvalParams), &res)
		})
		return time.Since(t0), err
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold chromedp: %w", err)
	}
	add(ColdResult{Name: ColdChromedp, Note: "attaches to the same tab (WithTargetID, WithDetachOnCancel)", Baseline: ColdRaw, D: d})

	// host-bridge: a new bridge per sample, acting for an actor of its own so
	// that only it can serve the invocation.
	Progress("cold start: host-bridge")
	parts := map[string]Durations{}
	d, err = timeN(n.Bridge, func(i int) (time.Duration, error) {
		actor := fmt.Sprintf("bench-cold-bridge-%d", i)
		clientID := fmt.Sprintf("bench-cold-bridge-%d", i)
		t0 := time.Now()
		stop, err := w.Server.startBridge(actor, clientID, w.Chromium.WSURL)
		if err != nil {
			return 0, err
		}
		defer stop()
		if err := w.Server.waitClientID(ctx, clientID); err != nil {
			return 0, err
		}
		t1 := time.Now()
		be := w.Server.Proxy.NewHostBridgeBackend(bb.Invocation{ConversationID: "cold", InterfaceID: wire.InterfaceMacOS,
			ActorPrincipalID: actor}, hostproxyOpts)
		defer be.Close()
		err = evalOnce(ctx, be)
		t2 := time.Now()
		parts["start → subscribed"] = append(parts["start → subscribed"], t1.Sub(t0))
		parts["subscribed → first answer"] = append(parts["subscribed → first answer"], t2.Sub(t1))
		return t2.Sub(t0), err
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold host-bridge: %w", err)
	}
	add(ColdResult{Name: ColdBridge, Note: "in-process hostproxy/bridge; dials the browser lazily at the first request",
		Baseline: ColdRaw, D: d, Parts: parts})

	Progress("cold start: host-bridge warm")
	hsel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{w.Server.Proxy.HostBridgeProvider(hostproxyProviderOpts)}})
	d, err = timeN(n.Fast, func(i int) (time.Duration, error) {
		t0 := time.Now()
		c := hsel.Client(w.Server.BridgeInvocation(fmt.Sprintf("cold-%d", i)))
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: warm host-bridge: %w", err)
	}
	add(ColdResult{Name: ColdBridgeWarm, Note: "Selector → host-bridge provider → bridge already connected", Baseline: ColdRaw, D: d})

	// extension: a new browser with the extension per sample.
	Progress("cold start: extension")
	parts = map[string]Durations{}
	d, err = timeN(n.Extension, func(i int) (time.Duration, error) {
		known := map[string]bool{}
		for _, c := range w.Server.Hub.Roster() {
			known[c.ClientID] = true
		}
		t0 := time.Now()
		br, err := StartChromium(ctx, w.ExtDir)
		if err != nil {
			return 0, err
		}
		defer br.Close()
		t1 := time.Now()
		id, err := w.Server.waitNewClient(ctx, wire.InterfaceChromeExtension, known)
		if err != nil {
			return 0, err
		}
		t2 := time.Now()
		inv := w.Server.Invocation("cold", wire.InterfaceMacOS)
		inv.TargetClientID = id
		be := w.Server.Proxy.NewExtensionBackend(inv, hostproxyOpts)
		defer be.Close()
		err = evalOnce(ctx, be)
		t3 := time.Now()
		parts["browser start (DevTools up)"] = append(parts["browser start (DevTools up)"], t1.Sub(t0))
		parts["→ extension paired and subscribed"] = append(parts["→ extension paired and subscribed"], t2.Sub(t1))
		parts["→ first answer (new tab, debugger attach)"] = append(parts["→ first answer (new tab, debugger attach)"], t3.Sub(t2))
		return t3.Sub(t0), err
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold extension: %w", err)
	}
	add(ColdResult{Name: ColdExtension, Note: "a new Chromium loading the extension; includes pairing", Baseline: ColdRaw, D: d, Parts: parts})

	Progress("cold start: extension warm")
	esel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{w.Server.Proxy.ExtensionProvider(hostproxyProviderOpts)}})
	d, err = timeN(n.Extension+2, func(i int) (time.Duration, error) {
		t0 := time.Now()
		c := esel.Client(w.Server.Invocation(fmt.Sprintf("cold-ext-%d", i), wire.InterfaceMacOS))
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: warm extension: %w", err)
	}
	add(ColdResult{Name: ColdExtNewConv, Note: "the extension opens a tab and attaches chrome.debugger", Baseline: ColdRaw, D: d})
	d, err = timeN(n.Fast, func(i int) (time.Duration, error) {
		t0 := time.Now()
		c := esel.Client(w.Server.Invocation("bench-ext-sel", wire.InterfaceMacOS))
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: warm extension: %w", err)
	}
	add(ColdResult{Name: ColdExtSameConv, Note: "the conversation's tab is attached already", Baseline: ColdRaw, D: d})

	// local: a new Browser per sample (driver + Chromium launch).
	Progress("cold start: local")
	d, err = timeN(n.Local, func(i int) (time.Duration, error) {
		t0 := time.Now()
		b := local.New(local.Options{Logger: discard})
		defer b.Close()
		return answer(t0, b.Client("cold"))
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: cold local: %w", err)
	}
	add(ColdResult{Name: ColdLocal, Note: "local.New → first Send: Playwright driver (Node) + persistent context + page", Baseline: ColdRaw, D: d})

	Progress("cold start: local warm")
	d, err = timeN(n.Fast, func(int) (time.Duration, error) {
		t0 := time.Now()
		c := w.Local.Client("bench-local")
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: warm local: %w", err)
	}
	add(ColdResult{Name: ColdLocalSame, Note: "browser running, the conversation's page open", Baseline: ColdRaw, D: d})
	d, err = timeN(n.Fast, func(i int) (time.Duration, error) {
		// local keeps a spare page ready for the next new conversation and
		// refills it in the background after one is taken; samples are
		// spaced so the refill of the previous one is not what is timed
		// (the package offers no signal for "spare ready").
		time.Sleep(localSpareGap)
		conv := fmt.Sprintf("warm-%d", i)
		defer w.Local.CloseConversation(conv)
		t0 := time.Now()
		c := w.Local.Client(conv)
		defer c.Close()
		return answer(t0, c)
	})
	if err != nil {
		return nil, fmt.Errorf("benchreport: warm local: %w", err)
	}
	add(ColdResult{Name: ColdLocalNewConv, Note: fmt.Sprintf("browser running; takes the spare page (samples %s apart)", localSpareGap), Baseline: ColdRaw, D: d})
	return out, nil
}

// waitClientID waits, on roster changes, until clientID is connected.
func (s *Server) waitClientID(ctx context.Context, clientID string) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := s.Hub.Changed()
		if _, ok := s.Hub.Client(clientID); ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("benchreport: client %s did not connect: %w", clientID, ctx.Err())
		}
	}
}

// waitNewClient waits until a client of interfaceID that is not in known
// connects and returns its id.
func (s *Server) waitNewClient(ctx context.Context, interfaceID string, known map[string]bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := s.Hub.Changed()
		for _, c := range s.Hub.Roster() {
			if c.InterfaceID == interfaceID && !known[c.ClientID] {
				return c.ClientID, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", fmt.Errorf("benchreport: no new %s client: %w", interfaceID, ctx.Err())
		}
	}
}
