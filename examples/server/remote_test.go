package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/remote"
	"github.com/browserchain/browserchain/internal/tlstest"
)

// TestRemoteFlags_NativeTLSOrLoopbackOnly: the remote listener needs a
// public URL; without a certificate it must be on loopback; certificate
// and key go together; limits are checked (REM-6).
func TestRemoteFlags_NativeTLSOrLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-remote-listen", "127.0.0.1:52800", "-public-url", "wss://browser.example.com/extension"}, true},
		{[]string{"-remote-listen", "127.0.0.1:52800"}, false},
		{[]string{"-remote-listen", "0.0.0.0:52800", "-public-url", "wss://browser.example.com/extension"}, false},
		{[]string{"-remote-listen", "0.0.0.0:52800", "-public-url", "wss://browser.example.com/extension", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, true},
		{[]string{"-remote-listen", "0.0.0.0:52800", "-public-url", "ws://browser.example.com/extension", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, false},
		{[]string{"-remote-listen", "0.0.0.0:52800", "-public-url", "wss://b.example/x", "-tls-cert", "c.pem"}, false},
		{[]string{"-tls-cert", "c.pem", "-tls-key", "k.pem"}, false},
		{[]string{"-remote-listen", "127.0.0.1:1", "-public-url", "wss://b.example/x", "-max-connections", "1001"}, false},
		{[]string{"-remote-listen", "127.0.0.1:1", "-public-url", "wss://b.example/x", "-pairing-ttl", "2h"}, false},
		{[]string{"-remote-listen", "127.0.0.1:1", "-public-url", "wss://b.example/x", "-device-ttl", "240h", "-renew-after", "240h"}, false},
	} {
		_, err := parseFlags(tc.args)
		assert.Equal(t, tc.ok, err == nil, "%v: %v", tc.args, err)
	}
}

// pairAndDial runs the `pair` verb on store, pairs with the link's secret
// as the extension does (POST base/extension/authorize) and opens the
// socket at wsBase/extension; it returns the socket, the client id of its
// ready frame and the device token.
func pairAndDial(ctx context.Context, t *testing.T, client *http.Client, base, wsBase, store, publicURL string) (*websocket.Conn, string, string) {
	t.Helper()
	var out bytes.Buffer
	handled, err := runVerb([]string{"pair", "-remote-store", store, "-public-url", publicURL}, &out)
	require.True(t, handled)
	require.NoError(t, err)
	link, err := url.Parse(strings.SplitN(out.String(), "\n", 2)[0])
	require.NoError(t, err)
	require.Len(t, link.Fragment, 43)

	token := remote.NewToken()
	body, _ := json.Marshal(map[string]string{"action": "pair", "next_token": token, "label": "laptop"})
	req, _ := http.NewRequest(http.MethodPost, base+"/extension/authorize", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+link.Fragment)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	ws, _, err := websocket.Dial(ctx, wsBase+"/extension", &websocket.DialOptions{
		HTTPClient: client, Subprotocols: []string{wire.SubprotocolAuthPrefix + token}})
	require.NoError(t, err)
	_, ready, err := ws.Read(ctx)
	require.NoError(t, err)
	var hello struct{ ClientID string }
	require.NoError(t, json.Unmarshal(ready, &hello))
	return ws, hello.ClientID, token
}

// TestRemote_OperatorVerbsAndFirstUseOverNativeTLS walks the README's
// set-up: the server with native TLS, `pair` prints a link, a device pairs
// and connects, `devices` lists it, a command with browser_mode extension
// runs on it (first-use verification), and `revoke -all` closes its socket
// (REM-1 … REM-6).
func TestRemote_OperatorVerbsAndFirstUseOverNativeTLS(t *testing.T) {
	dir := t.TempDir()
	cert := tlstest.Cert(t)
	certFile, keyFile := tlstest.WriteFiles(t, cert, dir)
	pool := tlstest.Pool(cert)
	store := filepath.Join(dir, "remote.db")

	c, err := parseFlags([]string{"-remote-listen", "127.0.0.1:0", "-public-url", "wss://127.0.0.1/extension",
		"-tls-cert", certFile, "-tls-key", keyFile, "-remote-store", store, "-local=false"})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("k"), 32), AllowedOrigins: c.origins, Logger: quiet()})
	require.NoError(t, err)
	defer rt.Close()
	addr, stop, err := startRemote(c.remote, rt, quiet())
	require.NoError(t, err)
	defer stop()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, clientID, token := pairAndDial(ctx, t, client, "https://"+addr, "wss://"+addr, store, "wss://127.0.0.1/extension")
	defer ws.CloseNow()

	var out bytes.Buffer
	out.Reset()
	_, err = runVerb([]string{"devices", "-remote-store", store}, &out)
	require.NoError(t, err)
	assert.Contains(t, out.String(), clientID)
	assert.Contains(t, out.String(), "laptop")
	assert.NotContains(t, out.String(), token)

	// The device answers, as the extension would.
	closed := make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				closed <- err
				return
			}
			var fr struct {
				Type  string
				Event eventhub.Envelope
			}
			var m hostproxy.RequestMessage
			if json.Unmarshal(data, &fr) != nil || fr.Type != wire.RemoteEnvelope || json.Unmarshal(fr.Event.Message, &m) != nil || m.Type != wire.TypeHostBrowserRequest {
				continue
			}
			content := `{"result":{"type":"string","value":"Example Domain"}}`
			switch m.CDPMethod { // the tab set-up of the conversation's first command
			case wire.MethodCreateTab:
				content = `{"tabId":7}`
			case wire.MethodAttach:
				content = `{}`
			case "Target.getTargetInfo":
				content = `{"targetInfo":{"targetId":"T7","type":"page"}}`
			}
			res, _ := json.Marshal(map[string]any{"type": "result", "requestId": m.RequestID, "content": content})
			_ = ws.Write(context.Background(), websocket.MessageText, res)
		}
	}()
	cr, err := rt.Run(ctx, runtime.CommandRequest{ConversationID: "c1", BrowserMode: "extension", Method: "Runtime.evaluate",
		Params: json.RawMessage(`{"expression":"document.title"}`)})
	require.NoError(t, err)
	require.Nil(t, cr.Error, "%+v", cr.Error)
	assert.Equal(t, browserbackend.KindExtension, cr.Backend)
	assert.JSONEq(t, `{"result":{"type":"string","value":"Example Domain"}}`, string(cr.Result))

	out.Reset()
	_, err = runVerb([]string{"revoke", "-remote-store", store, "-all"}, &out)
	require.NoError(t, err)
	assert.Equal(t, "revoked 1 devices and 0 unused links\n", out.String())
	err = <-closed
	assert.Equal(t, remote.StatusRevoked, websocket.CloseStatus(err))

	_, err = runVerb([]string{"revoke", "-remote-store", store}, &out)
	assert.Error(t, err, "revoke needs an id or -all")
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The distributed hub registers remote clients too.
var _ remote.Subscriber = (*natshub.Hub)(nil)

// TestRemote_PlainWebSocketOnLoopbackBehindAProxy: without a certificate
// the listener serves plain WebSocket on loopback (a TLS reverse proxy in
// front), with the public URL still wss:// (REM-6).
func TestRemote_PlainWebSocketOnLoopbackBehindAProxy(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "remote.db")
	c, err := parseFlags([]string{"-remote-listen", "127.0.0.1:0", "-public-url", "wss://browser.example.com/extension", "-remote-store", store})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("k"), 32), Logger: quiet()})
	require.NoError(t, err)
	defer rt.Close()
	addr, stop, err := startRemote(c.remote, rt, quiet())
	require.NoError(t, err)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// What the reverse proxy forwards, over plain HTTP on loopback.
	ws, clientID, _ := pairAndDial(ctx, t, http.DefaultClient, "http://"+addr, "ws://"+addr, store, "wss://browser.example.com/extension")
	defer ws.CloseNow()
	info, ok := rt.Hub.Client(clientID)
	require.True(t, ok)
	assert.Equal(t, wire.InterfaceChromeExtension, info.InterfaceID)
	_, resp, err := websocket.Dial(ctx, "ws://"+addr+"/extension", &websocket.DialOptions{Subprotocols: []string{wire.SubprotocolAuthPrefix + remote.NewToken()}})
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
