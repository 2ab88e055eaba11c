package hostproxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// fakeExtension answers the extension's Vellum.* tab methods over a set of
// tabs, as the reference extension does: an unknown tab is a CDP-style
// server error.
type fakeExtension struct {
	mu      sync.Mutex
	tabs    map[int]bool
	active  int
	next    int
	methods []string
}

func newFakeExtension(userTabs ...int) *fakeExtension {
	f := &fakeExtension{tabs: map[int]bool{}, next: 100}
	for _, id := range userTabs {
		f.tabs[id] = true
		f.active = id
	}
	return f
}

func (f *fakeExtension) send(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.methods = append(f.methods, cmd.Method)
	var p struct {
		TabID int `json:"tabId"`
	}
	_ = json.Unmarshal(cmd.Params, &p)
	gone := &browserbackend.Error{Class: browserbackend.ClassProtocol, CDPCode: -32000, Method: cmd.Method, Message: "no tab with id"}
	switch cmd.Method {
	case wire.MethodCreateTab:
		f.next++
		f.tabs[f.next] = true
		f.active = f.next
		return json.RawMessage(`{"tabId":` + strconv.Itoa(f.next) + `}`), nil
	case wire.MethodAttach, wire.MethodDetach:
		if !f.tabs[p.TabID] {
			return nil, gone
		}
		return json.RawMessage(`{}`), nil
	case wire.MethodCloseTab:
		if !f.tabs[p.TabID] {
			return nil, gone
		}
		delete(f.tabs, p.TabID)
		return json.RawMessage(`{}`), nil
	case wire.MethodListTabs:
		var list []map[string]any
		for id := range f.tabs {
			list = append(list, map[string]any{"tabId": id, "active": id == f.active})
		}
		raw, _ := json.Marshal(map[string]any{"tabs": list})
		return raw, nil
	}
	return json.RawMessage(`{}`), nil
}

func (f *fakeExtension) has(id string) bool {
	n, _ := strconv.Atoi(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tabs[n]
}

func (f *fakeExtension) closeByUser(id string) {
	n, _ := strconv.Atoi(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tabs, n)
}

func (f *fakeExtension) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.methods {
		if m == method {
			n++
		}
	}
	return n
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func resolveTab(t *testing.T, pins *tabPins, f *fakeExtension, conv string, req browserbackend.TabRequest) (browserbackend.Tab, error) {
	t.Helper()
	pin, err := pins.resolve(context.Background(), browserbackend.SendFunc(f.send), quiet,
		browserbackend.Invocation{ConversationID: conv, ActorPrincipalID: "actor", Tab: req})
	return pin.tab(), err
}

func TestExtensionTabsFollowTheInvocationsTabRequest(t *testing.T) {
	f := newFakeExtension(1)
	pins := newTabPins(0)

	first, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	assert.True(t, first.Owned, "the first call opens a tab of the conversation's own")
	assert.NotEqual(t, "1", first.ID)
	again, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	assert.Equal(t, first, again, "later calls use the pinned tab")
	assert.Equal(t, 1, f.count(wire.MethodCreateTab))

	other, err := resolveTab(t, pins, f, "b", browserbackend.TabRequest{})
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, other.ID, "another conversation gets its own tab")

	fresh, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{Want: browserbackend.TabNew})
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, fresh.ID)
	assert.True(t, f.has(first.ID), "the conversation's previous tab stays open, still its own")

	byID, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{Want: browserbackend.TabByID, ID: first.ID})
	require.NoError(t, err)
	assert.Equal(t, first, byID, "any of its tabs can be selected by id")
	byID, err = resolveTab(t, pins, f, "a", browserbackend.TabRequest{Want: browserbackend.TabByID, ID: fresh.ID})
	require.NoError(t, err)
	assert.Equal(t, fresh, byID)
	_, err = resolveTab(t, pins, f, "a", browserbackend.TabRequest{Want: browserbackend.TabByID, ID: other.ID})
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.CodeTargetNotFound, e.Code, "another conversation's tab is not this one's")
	assert.Equal(t, browserbackend.ClassPolicy, e.Class)

	adopted, err := resolveTab(t, pins, f, "c", browserbackend.TabRequest{Want: browserbackend.TabActive})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.Tab{ID: strconv.Itoa(f.active)}, adopted, "the user's active tab, not owned")
}

func TestExtensionTabClosedByTheUserIsReplaced(t *testing.T) {
	f := newFakeExtension(1)
	pins := newTabPins(0)
	tab, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	f.closeByUser(tab.ID)

	_, err = resolveTab(t, pins, f, "a", browserbackend.TabRequest{Want: browserbackend.TabByID, ID: tab.ID})
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.CodeTargetNotFound, e.Code, "a gone tab asked for by id")
	next, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	assert.NotEqual(t, tab.ID, next.ID, "the conversation gets a new tab")
	assert.True(t, next.Owned)
}

func TestExtensionConcurrentFirstCallsOpenOneTab(t *testing.T) {
	f := newFakeExtension(1)
	pins := newTabPins(0)
	var wg sync.WaitGroup
	got := make([]browserbackend.Tab, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
			assert.NoError(t, err)
			got[i] = tab
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, f.count(wire.MethodCreateTab))
	for _, tab := range got {
		assert.Equal(t, got[0], tab)
	}
}

func TestExtensionReleaseClosesOwnTabsAndDetachesAdoptedOnes(t *testing.T) {
	f := newFakeExtension(1)
	pins := newTabPins(0)
	own, err := resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	adopted, err := resolveTab(t, pins, f, "b", browserbackend.TabRequest{Want: browserbackend.TabActive})
	require.NoError(t, err)
	newSender := func(browserbackend.Invocation) browserbackend.ScopedClient { return browserbackend.SendFunc(f.send) }

	rel, err := pins.release(context.Background(), newSender, "a", false)
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: own}}, rel, "detach leaves it open")
	assert.True(t, f.has(own.ID))

	_, err = resolveTab(t, pins, f, "a", browserbackend.TabRequest{})
	require.NoError(t, err)
	reopened, _ := pins.get(pinKey{conversation: "a"})
	f.closeByUser(reopened.tab().ID)
	rel, err = pins.release(context.Background(), newSender, "a", true)
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: reopened.tab(), Gone: true}}, rel)

	rel, err = pins.release(context.Background(), newSender, "b", true)
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: adopted}}, rel, "a user's tab is only detached")
	assert.True(t, f.has(adopted.ID))

	rel, err = pins.release(context.Background(), newSender, "b", true)
	require.NoError(t, err)
	assert.Empty(t, rel, "nothing left")
}

func TestTabBackendScopesSessionlessCommandsToItsTab(t *testing.T) {
	var got []browserbackend.Command
	for _, cmd := range []browserbackend.Command{
		{Method: "Runtime.evaluate"},
		{Method: wire.MethodListTabs},
		{Method: "Target.setAutoAttach", SessionID: browserbackend.BrowserSessionID},
	} {
		got = append(got, inTab(cmd, "42"))
	}
	assert.Equal(t, "42", got[0].SessionID, "a page command runs in the conversation's tab")
	assert.Empty(t, got[1].SessionID, "the extension's own methods pass as given")
	assert.Equal(t, browserbackend.BrowserSessionID, got[2].SessionID, "a named session passes as given")
}

// A caller that moves its commands itself (createTab, selectTab, attach)
// moves the conversation's pin with them.
func TestTabBackendFollowsTheCallersOwnTabCommands(t *testing.T) {
	pins := newTabPins(0)
	inv := browserbackend.Invocation{ConversationID: "a"}
	b := &tabBackend{pins: pins, key: pinKeyOf(inv), inv: inv, tab: tabPin{id: 7, owned: true, inv: inv}}

	b.follow(browserbackend.Command{Method: wire.MethodCreateTab}, json.RawMessage(`{"tabId":9}`))
	assert.Equal(t, browserbackend.Tab{ID: "9", Owned: true}, b.Tab())
	b.follow(browserbackend.Command{Method: wire.MethodSelectTab, Params: json.RawMessage(`{"tabId":3}`)}, json.RawMessage(`{}`))
	assert.Equal(t, browserbackend.Tab{ID: "3"}, b.Tab(), "a selected tab is not the conversation's own")
	pin, ok := pins.get(pinKeyOf(inv))
	require.True(t, ok)
	assert.Equal(t, browserbackend.Tab{ID: "3"}, pin.tab(), "the next Build uses it")
	b.follow(browserbackend.Command{Method: "Runtime.evaluate"}, json.RawMessage(`{"tabId":5}`))
	assert.Equal(t, "3", b.Tab().ID, "other commands move nothing")
	b.follow(browserbackend.Command{Method: wire.MethodCloseTab, Params: json.RawMessage(`{"tabId":3}`)}, json.RawMessage(`{}`))
	assert.Empty(t, b.Tab().ID, "closing the conversation's tab unpins it")
	_, ok = pins.get(pinKeyOf(inv))
	assert.False(t, ok, "the next Build opens a new tab")
	assert.Empty(t, inTab(browserbackend.Command{Method: "Runtime.evaluate"}, b.Tab().ID).SessionID)
}
