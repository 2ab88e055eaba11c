package eventhub_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

// A hub served over HTTP: a desktop client subscribes, the runtime
// publishes a request to it, and the client reads the envelope.
func Example() {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, hub.EventsHandler())
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	defer hub.Close()

	ctx := context.Background()
	stream, err := eventhubtest.Dial(ctx, srv.URL+wire.PathEvents, eventhubtest.DialOptions{
		ClientID: "desktop-1", InterfaceID: wire.InterfaceMacOS,
	})
	if err != nil {
		panic(err)
	}
	defer stream.Close()
	stream.NextHeartbeat(ctx) // sent at once; the client is registered

	c, _ := hub.Client("desktop-1")
	fmt.Println(c.InterfaceID, eventhub.Supports(c.InterfaceID, eventhub.CapHostBrowser))

	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "desktop-1"}, "conv-1",
		map[string]string{"type": "host_browser_request", "requestId": "r1"})
	if err != nil {
		panic(err)
	}
	env, _ := stream.NextEvent(ctx)
	fmt.Println(env.ConversationID, string(env.Message))

	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "nobody"}, "", "x")
	fmt.Println(err)
	// Output:
	// macos true
	// conv-1 {"requestId":"r1","type":"host_browser_request"}
	// eventhub: client not connected: "nobody"
}

// The capability table (HUB-2).
func ExampleCapabilities() {
	fmt.Println(eventhub.Capabilities(wire.InterfaceChromeExtension))
	fmt.Println(eventhub.Supports(wire.InterfaceWindows, eventhub.CapHostAppControl))
	fmt.Println(eventhub.IsDesktop(wire.InterfaceChromeExtension), eventhub.IsDesktop(wire.InterfaceMacOS))
	// Output:
	// [host_browser]
	// false
	// false true
}
