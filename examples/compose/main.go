// Command compose is the README's "Composing your own selector" program: the
// four reference providers in order (extension, host-bridge, cdp-inspect,
// local), one invocation, a typed cdproto call and a load event. On a machine with nothing else running it is served by local.
//
//	go run ./examples/compose
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/local"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Fatal(err) // a *browserbackend.SelectionError's Report() says what was tried and how to fix it
	}
}

func run(ctx context.Context) error {
	cfg := cdpinspect.DefaultConfig() // or cdpinspect.LoadConfig(jsonBytes)
	hub := eventhub.New()             // serve hub.EventsHandler() etc.: see examples/server/runtime
	defer hub.Close()
	proxy := hostproxy.New(hostproxy.Options{Hub: hub})
	defer proxy.Close()
	browser := local.New(local.Options{}) // launches nothing until first use
	defer browser.Close()                 // no Chromium or driver outlives it

	inspect := cdpinspect.NewProvider(cfg) // one browser WebSocket shared by every call
	defer inspect.Close()

	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{
			proxy.ExtensionProvider(hostproxy.ProviderOptions{}), // extension
			proxy.HostBridgeProvider(hostproxy.ProviderOptions{ // host-bridge (never with extension)
				HostBridgeCooldown: cfg.DesktopAuto.Cooldown()}),
			inspect,                    // cdp-inspect
			local.NewProvider(browser), // local, last
		},
		Policy: browserbackend.DefaultPolicy, // or NoReplayPolicy
		Logger: slog.Default(),
	})

	client := sel.Client(browserbackend.Invocation{
		ConversationID: "conv-1", InterfaceID: "macos", ActorPrincipalID: "user-7",
		Mode: browserbackend.ModeAuto,
	})
	defer client.Close()

	res, err := cdp.Call(ctx, client, runtime.Evaluate, runtime.EvaluateParams{Expression: "navigator.userAgent"})
	if err != nil {
		return err
	}
	fmt.Println(client.Kind(), browserbackend.AttemptSummary(client.Attempts()), string(res.Result.Value))

	// Events: enable the domain, subscribe, then act.
	if _, err := cdp.Call(ctx, client, page.Enable, page.EnableParams{}); err != nil {
		return err
	}
	loads := cdp.Events(ctx, client, page.LoadEventFired)
	if _, err := cdp.Call(ctx, client, page.Navigate, page.NavigateParams{URL: "data:text/html,<title>hi</title>"}); err != nil {
		return err
	}
	for _, err := range loads {
		return err // nil: the first load event arrived
	}
	return ctx.Err()
}
