package hostproxy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// A client sends its results on the result socket: the auth message first,
// then one message per result; a result for no pending request is refused
// with the status the POST route would answer, and the socket stays open.
func ExampleProxy_ResultSocketHandler() {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	defer hub.Close()
	proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: slog.New(slog.DiscardHandler)})
	defer proxy.Close()
	verify := func(_ context.Context, token, clientID, iface string) (actor, registeredAs string, err error) {
		if token != "secret" { // a real host app verifies its access token here
			return "", "", errors.New("token rejected")
		}
		return "local-user", iface, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+wire.PathHostBrowserResultSocket, proxy.ResultSocketHandler(hostproxy.SocketOptions{
		Verify: verify, AllowedOrigins: []string{"chrome-extension://fnkhihckcobbnjjhjjacjdbbidilbmnl"}}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+wire.PathHostBrowserResultSocket, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseNow()
	for _, msg := range []string{
		`{"type":"auth","token":"secret","clientId":"ext-1"}`,
		`{"type":"result","requestId":"r-unknown","content":"{}","isError":false}`,
	} {
		_ = c.Write(ctx, websocket.MessageText, []byte(msg))
		_, reply, _ := c.Read(ctx)
		fmt.Println(string(reply))
	}
	// Output:
	// {"type":"ready","clientId":"ext-1","maxBodyBytes":67108864}
	// {"type":"error","requestId":"r-unknown","status":404,"code":"unknown_request","error":"no pending request \"r-unknown\" (unknown or already answered)"}
}
