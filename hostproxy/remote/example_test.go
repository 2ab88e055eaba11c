package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/coder/websocket"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/remote"
)

// The operator creates a link; the extension pairs with the secret from
// its fragment, then opens the socket with its new device token and is an
// extension client of the link's actor in the hub roster.
func ExampleServer() {
	dir, _ := os.MkdirTemp("", "remote-example")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	hub := eventhub.New(eventhub.WithLogger(quiet))
	defer hub.Close()
	proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: quiet})
	defer proxy.Close()
	store, _ := remote.OpenStore(filepath.Join(dir, "remote.db"), remote.StoreOptions{})
	defer store.Close()

	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	defer hs.Close()
	endpoint := "ws" + strings.TrimPrefix(hs.URL, "http") + "/extension" // loopback development: ws://
	srv, err := remote.New(remote.Options{Store: store, Proxy: proxy, Hub: hub, Endpoint: endpoint, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	srv.Mount(mux)

	ctx := context.Background()
	link, _ := srv.CreateLink(ctx, "user-7")

	// The extension's side.
	u, _ := url.Parse(link.URL)
	token := remote.NewToken()
	body, _ := json.Marshal(map[string]string{"action": "pair", "next_token": token, "label": "laptop"})
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/extension/authorize", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+u.Fragment)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("pair:", resp.StatusCode)

	ws, _, err := websocket.Dial(ctx, endpoint, &websocket.DialOptions{Subprotocols: []string{wire.SubprotocolAuthPrefix + token}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.CloseNow()
	_, ready, _ := ws.Read(ctx)
	var frame struct{ Type, ClientID string }
	_ = json.Unmarshal(ready, &frame)
	info, _ := hub.Client(frame.ClientID)
	fmt.Println(frame.Type, info.InterfaceID, info.ActorPrincipalID, info.MachineName)
	// Output:
	// pair: 200
	// ready chrome-extension user-7 laptop
}
