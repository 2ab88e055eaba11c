package hostproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// A client's result content is classified by the wire contract: string
// transport codes fail over, numeric CDP codes do not.
func ExampleClassifyResult() {
	_, err := hostproxy.ClassifyResult("Page.navigate", browserbackend.KindHostBridge,
		`{"code":"unreachable","message":"no Chrome with a debug port"}`, true)
	fmt.Println(errors.Is(err, browserbackend.ErrTransport))

	_, err = hostproxy.ClassifyResult("Nope.nope", browserbackend.KindHostBridge,
		`{"code":-32601,"message":"'Nope.nope' wasn't found"}`, true)
	fmt.Println(errors.Is(err, browserbackend.ErrProtocol), errors.Is(err, browserbackend.ErrMethodNotFound))

	res, _ := hostproxy.ClassifyResult("Runtime.evaluate", browserbackend.KindHostBridge,
		`{"result":{"type":"number","value":2}}`, false)
	fmt.Println(string(res))
	// Output:
	// true
	// true true
	// {"result":{"type":"number","value":2}}
}

// A Proxy on the in-process hub, with a desktop client that subscribes to
// GET /v1/events and answers every host_browser_request on the result route.
func ExampleProxy_Request() {
	discard := slog.New(slog.DiscardHandler)
	hub := eventhub.New(eventhub.WithLogger(discard))
	defer hub.Close()
	proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: discard})
	defer proxy.Close()
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, hub.EventsHandler())
	proxy.Mount(mux) // a real host app wraps mux in its auth middleware
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go runToyClient(ctx, srv.URL, "mac-1")
	for { // wait until the client is on the roster
		changed := hub.Changed()
		if _, ok := hub.Client("mac-1"); ok {
			break
		}
		<-changed
	}

	res, err := proxy.Request(ctx, hostproxy.Req{ConversationID: "c1", Method: "Browser.getVersion"})
	fmt.Println(string(res), err)
	// Output: {"product":"toy/1.0"} <nil>
}

// runToyClient is the smallest client of the wire contract: it answers every
// request with a fixed CDP result.
func runToyClient(ctx context.Context, base, clientID string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+wire.PathEvents, nil)
	req.Header.Set(wire.HeaderClientID, clientID)
	req.Header.Set(wire.HeaderInterfaceID, wire.InterfaceMacOS)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	for f, err := range eventhub.ReadFrames(resp.Body, 0) {
		if err != nil {
			return
		}
		env, err := f.Envelope()
		if f.IsComment || err != nil {
			continue
		}
		var m hostproxy.RequestMessage
		if json.Unmarshal(env.Message, &m) != nil || m.Type != wire.TypeHostBrowserRequest {
			continue
		}
		body, _ := json.Marshal(hostproxy.ResultBody{RequestID: m.RequestID, Content: `{"product":"toy/1.0"}`})
		post, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+wire.PathHostBrowserResult, bytes.NewReader(body))
		post.Header.Set(wire.HeaderClientID, clientID)
		if r, err := http.DefaultClient.Do(post); err == nil {
			r.Body.Close()
		}
	}
}
