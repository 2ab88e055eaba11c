package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// TestPopupHoldLeavesNoSessionOnTheUsersTabs: the popup hold (GRD-2) no
// longer detaches the tabs Chromium auto-attaches when it turns on; its
// off does (Chromium detaches every session auto-attach made before it
// answers). After a guarded call with three tabs of the user's open, no
// session is left on any of them, the conversation's own tab keeps its
// session, and the next guarded call on it works. On host-bridge (the
// bridge's connection of its own) and on cdp-inspect (the Provider's shared
// connection, whose auto-attach is counted per holder).
func TestPopupHoldLeavesNoSessionOnTheUsersTabs(t *testing.T) {
	run := func(t *testing.T, b *chromiumtest.Browser, gs *guardSites, tl *tools.Tools, inv browserbackend.Invocation, ctx func() context.Context) {
		_, err := tl.Navigate(ctx(), inv, tools.NavigateInput{URL: gs.allowed + "/page"})
		require.NoError(t, err)
		// Opened after the conversation has its tab (the bridge's page is
		// the first one it finds).
		user := dialRaw(t, b)
		for range 3 {
			user.call("Target.createTarget", map[string]any{"url": gs.user + "/tab"}, "")
		}
		_, err = tl.Read().Extract(ctx(), inv, tools.ExtractInput{Target: tools.Target{Selector: "#ok"}})
		require.NoError(t, err)

		var usersTabs int
		for _, p := range user.pages() {
			switch p.URL {
			case gs.user + "/tab":
				usersTabs++
				assert.False(t, p.Attached, "no session of the hold left on the user's tab %s", p.TargetID)
			case gs.allowed + "/page":
				assert.True(t, p.Attached, "the conversation's tab keeps its session")
			}
		}
		assert.Equal(t, 3, usersTabs)
		res, err := tl.Navigate(ctx(), inv, tools.NavigateInput{URL: gs.allowed + "/page?again"})
		require.NoError(t, err, "the conversation's tab still works after the hold's off")
		assert.Equal(t, "Allowed", res.Title)
		assert.Zero(t, gs.blockedHits.Load())
	}
	t.Run("host-bridge", func(t *testing.T) {
		gs := startGuardSites(t)
		h := startRuntime(t)
		b := chromiumtest.Start(t, chromiumtest.WithArgs(hostRules))
		runBridgeOn(t, h, b, false)
		// The guard of each call (per-call Clients: the hold ends with the
		// call).
		tl := tools.New(tools.Options{Selector: h.rt.Selector, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
		g := guard.MustNew(gs.policy)
		run(t, b, gs, tl, h.invocation("conv-hold-bridge"), func() context.Context { return guard.NewContext(stepCtx(t), g) })
	})
	t.Run("cdp-inspect", func(t *testing.T) {
		gs := startGuardSites(t)
		b := chromiumtest.Start(t, chromiumtest.WithArgs(hostRules))
		tl := toolsOver(t, cdpInspectProvider(t, b), tools.Options{})
		g := guard.MustNew(gs.policy)
		run(t, b, gs, tl, browserbackend.Invocation{ConversationID: "conv-hold-cdp", InterfaceID: "cli"},
			func() context.Context { return guard.NewContext(stepCtx(t), g) })
	})
}

// TestChromiumDetachesAutoAttachedSessionsWhenAutoAttachTurnsOff pins the
// Chromium behaviour the popup hold relies on: a browser-level
// Target.setAutoAttach off (with flatten, as the hold sends it) detaches
// every session the on auto-attached to an open tab, before its answer,
// and leaves a session of Target.attachToTarget on the same connection
// working.
func TestChromiumDetachesAutoAttachedSessionsWhenAutoAttachTurnsOff(t *testing.T) {
	b := chromiumtest.Start(t)
	r := dialRaw(t, b)
	var tabs []string
	for range 3 {
		var created struct {
			TargetID string `json:"targetId"`
		}
		require.NoError(t, json.Unmarshal(r.call("Target.createTarget", map[string]any{"url": "about:blank"}, ""), &created))
		tabs = append(tabs, created.TargetID)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(r.call("Target.attachToTarget", map[string]any{"targetId": tabs[0], "flatten": true}, ""), &att))
	r.call("Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
		"filter": []map[string]any{{"type": "page"}}}, "")
	var auto []string
	for sid := range r.sessions {
		if sid != att.SessionID {
			auto = append(auto, sid)
		}
	}
	require.GreaterOrEqual(t, len(auto), len(tabs), "every open tab auto-attached (the start page too)")

	r.call("Target.setAutoAttach", map[string]any{"autoAttach": false, "waitForDebuggerOnStart": false, "flatten": true}, "")
	for _, sid := range auto {
		assert.True(t, r.sessions[sid], "auto-attached session %s detached by the off", sid)
	}
	assert.False(t, r.sessions[att.SessionID], "the attachToTarget session stays")
	var res struct {
		Result struct {
			Value int `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(r.call("Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true}, att.SessionID), &res))
	assert.Equal(t, 42, res.Result.Value)
	for _, p := range r.pages() {
		assert.Equal(t, p.TargetID == tabs[0], p.Attached, "only the attachToTarget session is left, on %s", p.TargetID)
	}
}
