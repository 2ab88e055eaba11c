package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// holdBrowser is a fake host-bridge browser for the popup hold (GRD-2): its
// page is target "SELF" at pageURL; turning browser-level auto-attach on
// reports open tabs attached (not waiting), one per session in open, and
// wait (a tab the user opened meanwhile, waiting for a debugger); turning
// it off reports every one of them detached, as Chromium does before it
// answers. Page.navigate answers once the waiting tab was resumed, so the
// call cannot end before the hold has handled it.
func holdBrowser(pageURL string, open []string, wait string) *browserbackendtest.Backend {
	resumed := make(chan struct{})
	var b *browserbackendtest.Backend
	b = browserbackendtest.NewBackend(browserbackend.KindHostBridge, func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
		switch {
		case cmd.Method == "Target.getTargetInfo" && cmd.SessionID == "":
			return json.RawMessage(`{"targetInfo":{"targetId":"SELF","type":"page","url":"` + pageURL + `"}}`), nil
		case cmd.Method == "Target.setAutoAttach" && cmd.SessionID == browserbackend.BrowserSessionID:
			var p struct{ AutoAttach bool }
			_ = json.Unmarshal(cmd.Params, &p)
			for i, sid := range append(slices.Clone(open), wait) {
				tid := fmt.Sprintf("T%d", i)
				if p.AutoAttach {
					b.Emit(browserbackend.Event{Method: "Target.attachedToTarget", Params: json.RawMessage(fmt.Sprintf(
						`{"sessionId":%q,"targetInfo":{"targetId":%q,"type":"page","url":"https://user.test/%d"},"waitingForDebugger":%v}`,
						sid, tid, i, sid == wait))})
				} else {
					b.Emit(browserbackend.Event{Method: "Target.detachedFromTarget", SessionID: sid,
						Params: json.RawMessage(fmt.Sprintf(`{"sessionId":%q,"targetId":%q}`, sid, tid))})
				}
			}
		case cmd.Method == "Runtime.runIfWaitingForDebugger" && cmd.SessionID == wait:
			close(resumed)
		case cmd.Method == "Page.navigate":
			select {
			case <-resumed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			b.Emit(browserbackend.Event{Method: "Page.lifecycleEvent", Params: json.RawMessage(`{"frameId":"F","loaderId":"L","name":"load","timestamp":1}`)})
			return json.RawMessage(`{"frameId":"F","loaderId":"L"}`), nil
		case cmd.Method == "Runtime.evaluate":
			var p struct{ Expression string }
			_ = json.Unmarshal(cmd.Params, &p)
			if p.Expression == "location.href" { // the guard's URL check
				return json.RawMessage(`{"result":{"type":"string","value":"` + pageURL + `"}}`), nil
			}
			return json.RawMessage(`{"result":{"type":"object","value":{"url":"` + pageURL + `","title":"X"}}}`), nil
		}
		return nil, nil
	})
	return b
}

// TestPopupHoldSendsNoCommandPerOpenTab: turning the popup hold on makes
// Chromium auto-attach every tab already open; the hold leaves those
// sessions to its off (which detaches them all) instead of detaching each
// one, a round trip through the hub and the bridge per tab on host-bridge.
// Only the tab that waits for a debugger costs commands: it is resumed and
// detached. A guarded call with eight open tabs sends one setAutoAttach on,
// one off, and no command on or about an open tab's session.
func TestPopupHoldSendsNoCommandPerOpenTab(t *testing.T) {
	const pageURL = "http://127.0.0.1:8000/x"
	open := []string{"S0", "S1", "S2", "S3", "S4", "S5", "S6", "S7"}
	prov := &browserbackendtest.Provider{K: browserbackend.KindHostBridge, Desc: refDesc(browserbackend.KindHostBridge), NewBackend: func() *browserbackendtest.Backend {
		return holdBrowser(pageURL, open, "W")
	}}
	guardedNavigate(t, prov, pageURL)

	require.Len(t, prov.Backends(), 1)
	var autoAttach, detached []string
	for _, cmd := range prov.Backends()[0].Calls() {
		var p struct{ SessionID string }
		_ = json.Unmarshal(cmd.Params, &p)
		switch {
		case cmd.Method == "Target.setAutoAttach":
			autoAttach = append(autoAttach, string(cmd.Params))
		case cmd.Method == "Target.detachFromTarget":
			detached = append(detached, p.SessionID)
		}
		assert.NotContains(t, open, cmd.SessionID, "no command on an open tab's session: %s", cmd.Method)
		assert.NotContains(t, open, p.SessionID, "no command about an open tab's session: %s", cmd.Method)
	}
	require.Len(t, autoAttach, 2, "on, then off")
	assert.JSONEq(t, `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{"type":"page","exclude":false}]}`, autoAttach[0])
	assert.JSONEq(t, `{"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`, autoAttach[1])
	assert.Equal(t, []string{"W"}, detached, "only the tab that waited is detached by the hold")
}

// When the hold's off fails, the open tabs' sessions it left attached are
// detached one by one, so none stays attached for the connection's life.
func TestPopupHoldDetachesTheOpenTabsWhenItsOffFails(t *testing.T) {
	const pageURL = "http://127.0.0.1:8000/x"
	open := []string{"S0", "S1", "S2"}
	prov := &browserbackendtest.Provider{K: browserbackend.KindHostBridge, Desc: refDesc(browserbackend.KindHostBridge), NewBackend: func() *browserbackendtest.Backend {
		b := holdBrowser(pageURL, open, "W")
		inner := b.Handle
		b.Handle = func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
			if cmd.Method == "Target.setAutoAttach" && !turnsOn(cmd.Params) {
				return nil, browserbackendtest.ProtocolErr(-32602, "refused")
			}
			return inner(ctx, cmd)
		}
		return b
	}}
	guardedNavigate(t, prov, pageURL)
	require.Len(t, prov.Backends(), 1)
	var detached []string
	for _, cmd := range prov.Backends()[0].Calls() {
		if cmd.Method == "Target.detachFromTarget" {
			var p struct{ SessionID string }
			require.NoError(t, json.Unmarshal(cmd.Params, &p))
			detached = append(detached, p.SessionID)
		}
	}
	assert.ElementsMatch(t, []string{"W", "S0", "S1", "S2"}, detached)
}

// guardedNavigate runs one guarded navigate to pageURL on prov's backend,
// with the guard of that call only (a per-call Client: the hold ends with
// the call).
func guardedNavigate(t *testing.T, prov browserbackend.Provider, pageURL string) {
	t.Helper()
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
	g := guard.MustNew(guard.Policy{AllowedDomains: []string{"127.0.0.1"}, DevLoopback: []string{"127.0.0.1:8000"}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	ctx, cancel := context.WithTimeout(guard.NewContext(context.Background(), g), time.Minute)
	defer cancel()
	_, err := tl.Navigate(ctx, browserbackend.Invocation{ConversationID: "conv", InterfaceID: "cli"}, tools.NavigateInput{URL: pageURL})
	require.NoError(t, err)
}

// turnsOn reports whether setAutoAttach params turn auto-attach on.
func turnsOn(params json.RawMessage) bool {
	var p struct{ AutoAttach bool }
	_ = json.Unmarshal(params, &p)
	return p.AutoAttach
}
