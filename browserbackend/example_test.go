package browserbackend_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// A host app composes a selector from its own providers, in its own order.
// Here cdp-inspect is configured but nothing listens on its port, so the
// first command fails over to the local backend, which then stays sticky.
func ExampleNewSelector() {
	inspect := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindCDPInspect), func(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Reason: "cdpInspect.enabled", Build: func(ctx context.Context) (bb.ScopedClient, error) {
			return nil, bb.TransportError(bb.CodeUnreachable, "nothing listens on localhost:9222", nil)
		}}, nil
	})
	local := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindLocal), func(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Reason: "always last", Build: func(ctx context.Context) (bb.ScopedClient, error) {
			return bbt.NewBackend(bb.KindLocal, bbt.JSON(map[string]string{"frameId": "F1"})), nil
		}}, nil
	})
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{inspect, local},
		Logger:    slog.New(slog.DiscardHandler),
	})

	client := sel.Client(bb.Invocation{ConversationID: "conv-1", InterfaceID: "cli"})
	defer client.Close()
	res, err := client.Send(context.Background(), bb.Command{Method: "Page.navigate", Params: []byte(`{"url":"https://example.com"}`)})
	fmt.Println(string(res), err)
	fmt.Println("served by:", client.Kind())
	fmt.Println("attempts:", bb.AttemptSummary(client.Attempts()))
	// Output:
	// {"frameId":"F1"} <nil>
	// served by: local
	// attempts: [cdp-inspect@construction[unreachable] local@success]
}

// A pinned mode never falls back; when its backend is missing, the
// SelectionError's Report tells a person what was tried and how to fix it.
func ExampleSelectionError_Report() {
	inspect := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindCDPInspect), func(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Reason: "pinned", Build: func(ctx context.Context) (bb.ScopedClient, error) {
			return nil, &bb.Error{Class: bb.ClassTransport, Code: bb.CodeUnreachable,
				Detail: "version_fetch_failed", Message: "GET http://localhost:9222/json/version: connection refused"}
		}}, nil
	})
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{inspect}, Logger: slog.New(slog.DiscardHandler)})

	client := sel.Client(bb.Invocation{Mode: "cdp-debugger"}) // an alias of cdp-inspect
	defer client.Close()
	_, err := client.Send(context.Background(), bb.Command{Method: "Page.enable"})
	var se *bb.SelectionError
	if errors.As(err, &se) {
		fmt.Print(se.Report())
	}
	// Output:
	// Requested browser_mode "cdp-inspect" is unavailable.
	// Attempted backends:
	//   1. cdp-inspect — stage construction, code unreachable, discovery version_fetch_failed: GET http://localhost:9222/json/version: connection refused
	// To fix:
	//   - Start Chrome with --remote-debugging-port=9222 (and a dedicated --user-data-dir), or enable remote debugging at chrome://inspect/#remote-debugging.
	//   - Nothing answered on localhost:9222: check that cdp-inspect's port (the -cdp-port flag) matches the running Chrome.
}

// A Client is a cdproto cdp.Session, so typed commands run on whichever
// backend the selector picked; here the test kit's fake backend answers.
func ExampleClient_Call() {
	backend := bbt.NewBackend(bb.KindLocal, bbt.JSON(map[string]any{
		"result": map[string]any{"type": "number", "value": 2, "description": "2"},
	}))
	local := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindLocal), func(bb.Invocation, bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Build: func(context.Context) (bb.ScopedClient, error) { return backend, nil }}, nil
	})
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{local}, Logger: slog.New(slog.DiscardHandler)})
	client := sel.Client(bb.Invocation{})
	defer client.Close()

	res, err := cdp.Call(context.Background(), client, runtime.Evaluate, runtime.EvaluateParams{Expression: "1+1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Result.Type, string(res.Result.Value))
	fmt.Println(string(backend.Calls()[0].Params))
	// Output:
	// number 2
	// {"expression":"1+1"}
}
