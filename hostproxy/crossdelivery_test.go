package hostproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/hostproxy/vellumtest"
)

// echoEvaluate answers Runtime.evaluate of a JS string literal the way a
// browser does ({"result":{"type":"string","value":…}}), with "@clientID"
// appended to the value so that the caller can tell which client answered.
func echoEvaluate(clientID string) func(context.Context, string, json.RawMessage, string) (json.RawMessage, error) {
	return func(_ context.Context, method string, params json.RawMessage, _ string) (json.RawMessage, error) {
		var p struct {
			Expression string `json:"expression"`
		}
		var lit string
		if method != "Runtime.evaluate" || json.Unmarshal(params, &p) != nil || json.Unmarshal([]byte(p.Expression), &lit) != nil {
			return nil, fmt.Errorf("echo: cannot evaluate %s", method)
		}
		return json.Marshal(map[string]any{"result": map[string]string{"type": "string", "value": lit + "@" + clientID}})
	}
}

// Many conversations spread over many extension clients of the real wire
// (SSE stream; results POSTed one by one, or on the result socket for half
// of the clients) and their actors, all sending at
// once: every answer reaches the conversation that asked, from its actor's
// client (or the client it pinned), exactly once (PXY-1, PXY-2, PXY-4,
// HUB-4).
func TestManyConversationsOverManyClientsNeverCrossDeliver(t *testing.T) {
	const clients, conversations, rounds = 10, 50, 20
	// Client i is the only client of actor i, except that actor 0 has two
	// (0 and 1): the conversations of actor 0 are pinned to one of them.
	tokens := map[string]string{}
	actor := func(i int) string { return fmt.Sprintf("user-%d", max(i, 1)-1) }
	for i := range clients {
		tokens[fmt.Sprintf("token-%d", i)] = actor(i)
	}
	srv := hostproxytest.NewServer(t, hostproxytest.ServerOptions{Tokens: tokens, ResultSocket: true,
		SocketOrigins: []string{vellumtest.DevOrigin}})
	ctx := t.Context()
	ids := make([]string, clients)
	vcs := make([]*vellumtest.Client, clients)
	for i := range clients {
		ids[i] = fmt.Sprintf("ext-%d", i)
		c, err := vellumtest.Start(ctx, vellumtest.Options{ServerURL: srv.URL, ClientID: ids[i],
			Token: fmt.Sprintf("token-%d", i), Answer: echoEvaluate(ids[i]), ResultSocket: i%2 == 1})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		vcs[i] = c
		hostproxytest.WaitClient(t, srv.Hub, ids[i], true)
	}
	var wg sync.WaitGroup
	errs := make(chan error, conversations*rounds)
	for n := range conversations {
		target := ids[n%clients]
		inv := browserbackend.Invocation{ConversationID: fmt.Sprintf("conv-%d", n),
			InterfaceID: wire.InterfaceCLI, ActorPrincipalID: actor(n % clients)}
		if n%clients <= 1 {
			inv.TargetClientID = target // actor 0 has two clients
		}
		be := srv.Proxy.NewExtensionBackend(inv, hostproxy.BackendOptions{})
		t.Cleanup(func() { be.Close() })
		wg.Go(func() {
			for r := range rounds {
				token := fmt.Sprintf("conv-%d/%d", n, r)
				expr, _ := json.Marshal(token)
				params, _ := json.Marshal(map[string]any{"expression": string(expr), "returnByValue": true})
				raw, err := be.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: params})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", token, err)
					continue
				}
				var res struct {
					Result struct {
						Value string `json:"value"`
					} `json:"result"`
				}
				if err := json.Unmarshal(raw, &res); err != nil || res.Result.Value != token+"@"+target {
					errs <- fmt.Errorf("%s: answered %s", token, raw)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, c := range vcs {
		c.Close() // waits for its request goroutines, which count after their post returns
		s := c.Stats()
		per := conversations / clients * rounds
		assert.Equal(t, per, s.Requests, "%s: requests received", ids[i])
		assert.Equal(t, per, s.Results, "%s: results accepted", ids[i])
		assert.Empty(t, s.ResultsRefused, "%s: results refused", ids[i])
		if i%2 == 1 {
			assert.Equal(t, per, s.SocketResults, "%s: results over the socket", ids[i])
		} else {
			assert.Zero(t, s.SocketResults, "%s: results over the socket", ids[i])
		}
	}
}
