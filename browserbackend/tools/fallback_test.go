package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// fakePage answers like a page that loads at once: Page.navigate emits the
// load lifecycle event of its frame and loader, Runtime.evaluate returns
// {url, title}.
func fakePage(k browserbackend.Kind) *browserbackendtest.Backend {
	var b *browserbackendtest.Backend
	b = browserbackendtest.NewBackend(k, func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
		switch cmd.Method {
		case "Page.navigate":
			b.Emit(browserbackend.Event{Method: "Page.lifecycleEvent", Params: json.RawMessage(`{"frameId":"F","loaderId":"L","name":"load","timestamp":1}`)})
			return json.RawMessage(`{"frameId":"F","loaderId":"L"}`), nil
		case "Runtime.evaluate":
			return json.RawMessage(`{"result":{"type":"object","value":{"url":"http://127.0.0.1/x","title":"X"}}}`), nil
		}
		return nil, nil
	})
	return b
}

func TestAutoFallsBackWhenTheExtensionCannotOpenATab(t *testing.T) {
	ext := &browserbackendtest.Provider{K: browserbackend.KindExtension, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindExtension, nil).
			FailOn(1, browserbackendtest.TransportErr(browserbackend.CodeNoClient))
	}}
	loc := &browserbackendtest.Provider{K: browserbackend.KindLocal, NewBackend: func() *browserbackendtest.Backend {
		return fakePage(browserbackend.KindLocal)
	}}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(), Providers: []browserbackend.Provider{ext, loc}})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "c"}

	res, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: "http://127.0.0.1/x"})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, res.Backend, "auto mode runs the chain after the extension failed")
	assert.Equal(t, "X", res.Title)
	var tabCalls []string
	for _, b := range ext.Backends() {
		tabCalls = append(tabCalls, b.Methods()...)
	}
	assert.Equal(t, "Vellum.createTab", tabCalls[0], "the extension got the tab command first, never a raw CDP command")
	_, pinned := tl.PinnedTab(inv)
	assert.False(t, pinned)

	// Pinned to the extension, the same failure is the answer (SEL-7).
	_, err = tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: "http://127.0.0.1/x", BrowserMode: "extension"})
	require.Error(t, err)
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	var se *browserbackend.SelectionError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Pinned)
}

func TestExtensionTabCommandsPrecedeEveryCDPCommand(t *testing.T) {
	var backends []*browserbackendtest.Backend
	ext := &browserbackendtest.Provider{K: browserbackend.KindExtension, NewBackend: func() *browserbackendtest.Backend {
		b := fakePage(browserbackend.KindExtension)
		inner := b.Handle
		b.Handle = func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
			if cmd.Method == "Vellum.createTab" {
				return json.RawMessage(`{"tabId":"42","clientId":"ext"}`), nil
			}
			return inner(ctx, cmd)
		}
		backends = append(backends, b)
		return b
	}}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(), Providers: []browserbackend.Provider{ext}})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "c"}

	res, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: "http://127.0.0.1/x"})
	require.NoError(t, err)
	assert.Equal(t, 42, res.TabID)
	_, err = tl.Extract(context.Background(), inv, tools.ExtractInput{})
	require.NoError(t, err)
	require.Len(t, backends, 2, "one backend per tool call")
	assert.Equal(t, []string{"Vellum.createTab", "Vellum.attach"}, backends[0].Methods()[:2], "the first navigate opens and attaches a tab")
	assert.Equal(t, "Vellum.attach", backends[1].Methods()[0], "a later call selects the pinned tab first")
	assert.JSONEq(t, `{"tabId":42}`, string(backends[1].Calls()[0].Params))
}

func TestConcurrentFirstCallsOfAConversationOpenOneTab(t *testing.T) {
	var mu sync.Mutex
	creates := 0
	ext := &browserbackendtest.Provider{K: browserbackend.KindExtension, NewBackend: func() *browserbackendtest.Backend {
		b := fakePage(browserbackend.KindExtension)
		inner := b.Handle
		b.Handle = func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
			if cmd.Method == "Vellum.createTab" {
				mu.Lock()
				creates++
				mu.Unlock()
				return json.RawMessage(`{"tabId":"7","clientId":"ext"}`), nil
			}
			return inner(ctx, cmd)
		}
		return b
	}}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(), Providers: []browserbackend.Provider{ext}})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "c"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: "http://127.0.0.1/x"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, creates, "one dedicated tab for the conversation")
}
