package hostproxytest_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// A test runtime with one bearer token; a subscription with that token is
// registered as the token's actor.
func ExampleNewServer() {
	t := &testing.T{} // in a real test, the test's own *testing.T, whose cleanup closes srv
	srv := hostproxytest.NewServer(t, hostproxytest.ServerOptions{Tokens: map[string]string{"tok": "alice"}})
	defer srv.Close()
	defer srv.Hub.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+wire.PathEvents, nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set(wire.HeaderClientID, "mac-1")
	req.Header.Set(wire.HeaderInterfaceID, wire.InterfaceMacOS)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	hostproxytest.WaitClient(t, srv.Hub, "mac-1", true)
	info, _ := srv.Hub.Client("mac-1")
	fmt.Println(info.ActorPrincipalID, info.Has(eventhub.CapHostBrowser))
	// Output: alice true
}
