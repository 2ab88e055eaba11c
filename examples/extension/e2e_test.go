package extension_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type tab struct {
	ID     int    `json:"id"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"`
}

func TestExtensionPairsSubscribesAndDrivesDedicatedTab(t *testing.T) {
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	ext := s.waitExtension(t)
	assert.Equal(t, auth.DefaultActor, ext.ActorPrincipalID, "the actor comes from the paired token")
	assert.True(t, ext.Has("host_browser"))
	require.NotEmpty(t, s.logs.matching("auth: client paired", "chrome-extension"))

	c := s.rt.Selector.Client(s.invocation("conv-1"))
	defer c.Close()

	var created struct{ Tab tab }
	send(t, c, "Vellum.createTab", map[string]any{"url": fx.page("first"), "active": false}, &created)
	assert.Equal(t, browserbackend.KindExtension, c.Kind(), "an auto invocation picks the extension")
	require.NotZero(t, created.Tab.ID)
	require.NotEmpty(t, s.logs.matching("candidate succeeded, backend is now sticky", "candidateKind=extension"))

	loads, stop := c.Events("Page.loadEventFired")
	defer stop()
	send(t, c, "Page.enable", nil, nil)
	send(t, c, "Page.navigate", map[string]any{"url": fx.page("second")}, nil)
	select {
	case <-loads:
	case <-timeout():
		t.Fatal("no Page.loadEventFired was forwarded")
	}

	var ev struct {
		Result struct{ Value string }
	}
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &ev)
	assert.Equal(t, "second", ev.Result.Value, "commands run in the dedicated tab")

	var shot struct{ Data string }
	send(t, c, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))

	var list struct{ Tabs []tab }
	send(t, c, "Vellum.listTabs", map[string]any{}, &list)
	var other int
	found := false
	for _, tb := range list.Tabs {
		if tb.ID == created.Tab.ID {
			found = true
			assert.Contains(t, tb.URL, "/page/second")
		} else {
			other = tb.ID
		}
	}
	require.True(t, found, "listTabs shows the dedicated tab: %+v", list.Tabs)
	require.NotZero(t, other, "the browser's start tab is listed too")

	var fnd struct{ Tab *tab }
	send(t, c, "Vellum.findTab", map[string]any{"url": "/page/second"}, &fnd)
	require.NotNil(t, fnd.Tab)
	assert.Equal(t, created.Tab.ID, fnd.Tab.ID)

	send(t, c, "Vellum.selectTab", map[string]any{"tabId": other}, nil)
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "location.href", "returnByValue": true}, &ev)
	assert.Equal(t, "about:blank", ev.Result.Value, "selectTab moves later commands to that tab")
	send(t, c, "Vellum.selectTab", map[string]any{"tabId": created.Tab.ID}, nil)

	invalidated, stopInv := c.Events(browserbackend.MethodTargetDetached)
	defer stopInv()
	send(t, c, "Vellum.closeTab", map[string]any{"tabId": created.Tab.ID}, nil)
	select {
	case <-invalidated:
	case <-timeout():
		t.Fatal("closing the tab did not forward an invalidation")
	}
	send(t, c, "Vellum.listTabs", map[string]any{}, &list)
	for _, tb := range list.Tabs {
		assert.NotEqual(t, created.Tab.ID, tb.ID, "closeTab closed the tab")
	}

	// A CDP error is a protocol error, not a transport error.
	_, err = trySend(c, "Nope.nothing", nil)
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)
}
