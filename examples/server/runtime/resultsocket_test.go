package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/auth"
)

func dialResultSocket(t *testing.T, srv *httptest.Server, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	hdr := http.Header{}
	if origin != "" {
		hdr.Set("Origin", origin)
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+wire.PathHostBrowserResultSocket,
		&websocket.DialOptions{HTTPHeader: hdr})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	require.NoError(t, c.Write(context.Background(), websocket.MessageText, data))
}

func wsRecv(c *websocket.Conn) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func TestResultSocketIsMountedAndCompletesAnExtensionCommand(t *testing.T) {
	var mu sync.Mutex
	var transports []hostproxy.Transport
	cfg := runtime.Config{Key: bytes.Repeat([]byte("s"), 32), AllowedOrigins: []string{origin},
		SelectorOptions: browserbackend.Options{Grace: -1},
		OnResult: func(r hostproxy.ResultReceipt) {
			mu.Lock()
			transports = append(transports, r.Transport)
			mu.Unlock()
		}}
	rt, err := runtime.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	t.Cleanup(func() { rt.Close(); srv.Close() })

	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // against a hang only
	defer cancel()
	stream, err := eventhubtest.Dial(ctx, srv.URL+wire.PathEvents, eventhubtest.DialOptions{ClientID: "c1",
		InterfaceID: "chrome-extension", Header: http.Header{"Authorization": {"Bearer " + tok.Token}}})
	require.NoError(t, err)
	defer stream.Close()

	// Another client's token cannot claim c1; a web page's origin is refused.
	other, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c2"})
	require.NoError(t, err)
	c, _, err := dialResultSocket(t, srv, origin)
	require.NoError(t, err)
	wsSend(t, c, map[string]string{"type": "auth", "token": other.Token, "clientId": "c1"})
	_, err = wsRecv(c)
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), err)
	_, resp, err := dialResultSocket(t, srv, "https://evil.example")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	c, _, err = dialResultSocket(t, srv, origin)
	require.NoError(t, err)
	wsSend(t, c, map[string]string{"type": "auth", "token": tok.Token, "clientId": "c1"})
	m, err := wsRecv(c)
	require.NoError(t, err)
	require.Equal(t, "ready", m["type"])

	done := make(chan runtime.CommandResponse, 1)
	go func() {
		out, _ := rt.Run(ctx, runtime.CommandRequest{ConversationID: "conv", BrowserMode: "extension",
			Method: "Runtime.evaluate", TargetClientID: "c1"})
		done <- out
	}()
	req := nextPageRequest(t, ctx, stream, func(requestID, content string) {
		wsSend(t, c, map[string]any{"type": "result", "requestId": requestID, "content": content})
		m, err := wsRecv(c)
		require.NoError(t, err)
		assert.Equal(t, "accepted", m["type"])
	})
	require.Equal(t, "Runtime.evaluate", req.CDPMethod)
	wsSend(t, c, map[string]any{"type": "result", "requestId": req.RequestID, "content": `{"result":{"value":2}}`})
	m, err = wsRecv(c)
	require.NoError(t, err)
	assert.Equal(t, "accepted", m["type"])
	out := <-done
	assert.Equal(t, browserbackend.KindExtension, out.Backend)
	assert.JSONEq(t, `{"result":{"value":2}}`, string(out.Result))
	mu.Lock()
	for _, tr := range transports {
		assert.Equal(t, hostproxy.TransportWebSocket, tr, "the tab set-up and the command, each answered over the socket")
	}
	assert.GreaterOrEqual(t, len(transports), 3)
	mu.Unlock()
}

// A subscribed result socket registers its client with the hub as the
// interface its token was issued for: an extension's token cannot
// register as a desktop client (and gain its capabilities), a desktop
// token cannot pass for the extension, and a client that claims no
// interface is registered as its token's, not as the extension.
func TestResultSocketRegistersTheInterfaceItsTokenWasIssuedFor(t *testing.T) {
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("s"), 32), AllowedOrigins: []string{origin},
		SelectorOptions: browserbackend.Options{Grace: -1}})
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	t.Cleanup(func() { rt.Close(); srv.Close() })
	ext, err := rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceChromeExtension})
	require.NoError(t, err)
	desk, err := rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS})
	require.NoError(t, err)

	for _, tc := range []struct {
		name, token, claims, want string // want "" = refused
	}{
		{"extension token claiming macos", ext.Token, wire.InterfaceMacOS, ""},
		{"macos token claiming the extension", desk.Token, wire.InterfaceChromeExtension, ""},
		{"macos token claiming nothing", desk.Token, "", wire.InterfaceMacOS},
		{"extension token claiming nothing", ext.Token, "", wire.InterfaceChromeExtension},
		{"macos token claiming macos", desk.Token, wire.InterfaceMacOS, wire.InterfaceMacOS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := "sock-" + strings.ReplaceAll(tc.name, " ", "-")
			c, _, err := dialResultSocket(t, srv, "")
			require.NoError(t, err)
			msg := map[string]any{"type": "auth", "token": tc.token, "clientId": client, "subscribe": true}
			if tc.claims != "" {
				msg["interfaceId"] = tc.claims
			}
			wsSend(t, c, msg)
			m, err := wsRecv(c)
			if tc.want == "" {
				assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "%v %v", m, err)
				_, registered := rt.Hub.Client(client)
				assert.False(t, registered)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "ready", m["type"])
			info, ok := rt.Hub.Client(client)
			require.True(t, ok)
			assert.Equal(t, tc.want, info.InterfaceID)
		})
	}
}
