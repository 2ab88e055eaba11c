package cdpinspect_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// attachedPages returns, from a connection of the test's own, the page
// targets of b and whether a DevTools client is attached to each
// (Target.getTargets' "attached").
func attachedPages(t *testing.T, b *chromiumtest.Browser) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, b.BrowserWSURL, nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 24)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Target.getTargets"}`)))
	var res json.RawMessage
	for res == nil {
		_, data, err := ws.Read(ctx)
		require.NoError(t, err)
		var f struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(data, &f))
		if f.ID == 1 {
			res = f.Result
		}
	}
	var list struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
			Attached bool   `json:"attached"`
		} `json:"targetInfos"`
	}
	require.NoError(t, json.Unmarshal(res, &list))
	out := map[string]bool{}
	for _, ti := range list.TargetInfos {
		if ti.Type == "page" {
			out[ti.TargetID] = ti.Attached
		}
	}
	return out
}

// evalString evaluates expr in be's page and returns the string value.
func evalString(t *testing.T, be *cdpinspect.Backend, expr string) string {
	t.Helper()
	res := send(t, be, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var out struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(res, &out))
	return out.Result.Value
}

func TestProviderConversationsShareOneBrowserSocket(t *testing.T) {
	b := chromiumtest.Start(t)
	p := enabledProvider(b.Port)
	t.Cleanup(func() { p.Close() })

	a1, b1 := mustBuild(t, p, "conv-A"), mustBuild(t, p, "conv-B")
	require.NotEqual(t, a1.TargetID(), b1.TargetID(), "each conversation works in a tab of its own")
	send(t, a1, "Runtime.evaluate", map[string]any{"expression": `window.name = "A"`})
	send(t, b1, "Runtime.evaluate", map[string]any{"expression": `window.name = "B"`})
	st := p.ConnStats()
	assert.Equal(t, cdpinspect.ConnStats{Open: true, Dials: 1, InUse: 2, Sessions: 2}, st, "one socket, a session per conversation")
	attached := attachedPages(t, b)
	assert.True(t, attached[a1.TargetID()], "conv-A's tab has a session")
	assert.True(t, attached[b1.TargetID()], "conv-B's tab has a session")

	require.NoError(t, a1.Close())
	require.NoError(t, b1.Close())
	assert.Equal(t, cdpinspect.ConnStats{Open: true, Dials: 1, InUse: 0, Sessions: 2}, p.ConnStats(),
		"closing the invocations keeps the socket and the sessions for the next ones")

	a2, b2 := mustBuild(t, p, "conv-A"), mustBuild(t, p, "conv-B")
	assert.Equal(t, a1.SessionID(), a2.SessionID(), "the next invocation reuses its conversation's session")
	assert.Equal(t, b1.SessionID(), b2.SessionID())
	assert.Equal(t, "A", evalString(t, a2, "window.name"), "and acts in its own tab")
	assert.Equal(t, "B", evalString(t, b2, "window.name"))
	assert.Equal(t, int64(1), p.ConnStats().Dials, "no second browser WebSocket")

	// A conversation's events reach only its own invocations.
	evA, stopA := a2.Subscribe("Runtime.consoleAPICalled")
	defer stopA()
	evB, stopB := b2.Subscribe("Runtime.consoleAPICalled")
	defer stopB()
	send(t, b2, "Runtime.enable", nil)
	send(t, a2, "Runtime.enable", nil)
	send(t, b2, "Runtime.evaluate", map[string]any{"expression": `console.log("from B")`})
	send(t, a2, "Runtime.evaluate", map[string]any{"expression": `console.log("from A")`})
	select {
	case ev := <-evA:
		assert.Equal(t, a2.SessionID(), ev.SessionID, "conv-A sees its own console, not conv-B's (sent first)")
	case <-time.After(20 * time.Second):
		t.Fatal("no console event for conv-A")
	}
	select {
	case ev := <-evB:
		assert.Equal(t, b2.SessionID(), ev.SessionID)
	case <-time.After(20 * time.Second):
		t.Fatal("no console event for conv-B")
	}
}

func TestProviderRedialsAfterTheBrowserIsKilledAndRestarted(t *testing.T) {
	dir := t.TempDir()
	announce := func(b *chromiumtest.Browser) { // as Chrome does on start
		require.NoError(t, os.WriteFile(filepath.Join(dir, "DevToolsActivePort"),
			[]byte(strconv.Itoa(b.Port)+"\n"+b.WSPath), 0o600))
	}
	b1 := chromiumtest.Start(t)
	announce(b1)
	cfg := cfgFor(closedPort(t))
	cfg.Enabled = true
	p := cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs(dir))
	t.Cleanup(func() { p.Close() })
	be := mustBuild(t, p, "conv")
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1"})
	require.Equal(t, int64(1), p.ConnStats().Dials)

	b1.Kill()
	select {
	case <-be.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the shared connection did not end with the browser")
	}
	_, err := trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.ErrorIs(t, err, bb.ErrTransport, "the dead browser's invocation fails as transport (failover material)")
	assert.False(t, p.ConnStats().Open)

	b2 := chromiumtest.Start(t)
	announce(b2)
	next := mustBuild(t, p, "conv")
	assert.Equal(t, "2", string(mustValue(t, next, "1+1")), "the next invocation works in the restarted browser")
	st := p.ConnStats()
	assert.Equal(t, int64(2), st.Dials, "the socket was dialled again")
	assert.True(t, st.Open)
	assert.True(t, pageIDs(t, b2)[next.TargetID()], "in a tab of the new browser")
}

// mustValue evaluates expr on be and returns result.value as JSON.
func mustValue(t *testing.T, be *cdpinspect.Backend, expr string) json.RawMessage {
	t.Helper()
	res := send(t, be, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var out struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(res, &out))
	return out.Result.Value
}

func TestProviderCloseClosesTheSharedSocketAndLeaksNothing(t *testing.T) {
	b := chromiumtest.Start(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := cfgFor(b.Port)
	cfg.Enabled = true
	p := cdpinspect.NewProvider(cfg, cdpinspect.WithWebSocketURL(b.BrowserWSURL), cdpinspect.WithUserDataDirs())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var open []*cdpinspect.Backend
	for _, conv := range []string{"conv-1", "conv-2", ""} {
		c, err := p.Propose(bb.Invocation{ConversationID: conv, InterfaceID: "cli"}, bb.Env{})
		require.NoError(t, err)
		sc, err := c.Build(ctx)
		require.NoError(t, err)
		be := sc.(*cdpinspect.Backend)
		_, err = be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
		require.NoError(t, err)
		open = append(open, be)
	}
	tabs := []string{open[0].TargetID(), open[1].TargetID()}
	events, _ := open[0].Subscribe("")
	require.Equal(t, cdpinspect.ConnStats{Open: true, Dials: 1, InUse: 3, Sessions: 3}, p.ConnStats())

	require.NoError(t, p.Close())
	assert.False(t, p.ConnStats().Open, "the socket is closed")
	for _, be := range open {
		<-be.Done()
		_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
		assert.ErrorIs(t, err, bb.ErrClosed)
		require.NoError(t, be.Close())
	}
	for range events { // the channels close
	}
	c, err := p.Propose(bb.Invocation{ConversationID: "conv-1", InterfaceID: "cli"}, bb.Env{})
	require.NoError(t, err)
	_, err = c.Build(ctx)
	assert.ErrorIs(t, err, bb.ErrClosed, "a closed provider builds nothing")
	require.NoError(t, p.Close(), "idempotent")
	pages := pageIDs(t, b)
	http.DefaultClient.CloseIdleConnections()
	for _, id := range tabs {
		assert.True(t, pages[id], "INS-3: the conversations' tabs stay open")
	}
}

func TestProviderWithNegativeIdleTimeoutClosesTheSocketWhenUnused(t *testing.T) {
	b := chromiumtest.Start(t)
	p := enabledProvider(b.Port, cdpinspect.WithIdleTimeout(-1))
	t.Cleanup(func() { p.Close() })
	be := mustBuild(t, p, "conv")
	other := mustBuild(t, p, "conv")
	require.NoError(t, be.Close())
	assert.True(t, p.ConnStats().Open, "still used by the second invocation")
	require.NoError(t, other.Close())
	assert.Equal(t, cdpinspect.ConnStats{Dials: 1}, p.ConnStats(), "closed with the last invocation")

	next := mustBuild(t, p, "conv")
	assert.Equal(t, other.TargetID(), next.TargetID(), "the conversation keeps its tab")
	assert.Equal(t, "2", string(mustValue(t, next, "1+1")))
	assert.Equal(t, int64(2), p.ConnStats().Dials)
}
