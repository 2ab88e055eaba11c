package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/bridge"
)

// A bridge for the local Chrome on localhost:9222, run until ctx ends. Here
// the server does not exist, so Run just retries until the deadline.
func ExampleBridge_Run() {
	cfg := cdpinspect.DefaultConfig()
	b, err := bridge.New(bridge.Options{
		ServerURL: "http://127.0.0.1:1",
		ClientID:  "example-bridge",
		Dial:      bridge.CDPInspectDialer(cfg),
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	fmt.Println(b.ClientID(), b.Run(ctx))
	// Output: example-bridge context deadline exceeded
}

// Failures reach the server as structured codes.
func ExampleErrorContentFor() {
	fmt.Println(bridge.ErrorContentFor(browserbackend.ProtocolError(-32601, "'Foo.bar' wasn't found")))
	fmt.Println(bridge.ErrorContentFor(browserbackend.TransportError(browserbackend.CodeUnreachable, "no DevTools endpoint", nil)))
	// Output:
	// {"code":-32601,"message":"'Foo.bar' wasn't found"}
	// {"code":"unreachable","message":"no DevTools endpoint"}
}
