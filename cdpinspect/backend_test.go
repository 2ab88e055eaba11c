package cdpinspect_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// navigateAndWait navigates the backend's page and waits for its load event
// (Page.loadEventFired on the page session), not by polling.
func navigateAndWait(t *testing.T, be *cdpinspect.Backend, url string) {
	t.Helper()
	events, cancel := be.Subscribe("Page.loadEventFired")
	defer cancel()
	send(t, be, "Page.enable", nil)
	send(t, be, "Page.navigate", map[string]string{"url": url})
	ctx, done := context.WithTimeout(context.Background(), 20*time.Second)
	defer done()
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "event stream closed")
			if ev.SessionID == be.SessionID() {
				return
			}
		case <-ctx.Done():
			t.Fatal("no Page.loadEventFired")
		}
	}
}

func TestBackendNavigatesEvaluatesAndCapturesLargeScreenshotIntact(t *testing.T) {
	b := chromiumtest.Start(t, chromiumtest.WithWindowSize(1600, 1200))
	srv := chromiumtest.FixtureServer(t, nil)
	be := dialBrowser(t, b)

	send(t, be, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1600, "height": 1200, "deviceScaleFactor": 1, "mobile": false})
	navigateAndWait(t, be, srv.URL+"/noise")

	raw := send(t, be, "Runtime.evaluate", map[string]any{"expression": "window.noiseReady === true && document.title", "returnByValue": true})
	var ev struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &ev))
	assert.Equal(t, "noise", ev.Result.Value)

	raw = send(t, be, "Page.captureScreenshot", map[string]any{"format": "png"})
	var shot struct {
		Data string `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &shot))
	img, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(img), 1500*1000, "screenshot should be at least 1.5 MB, got %d bytes", len(img))
	decoded, err := png.Decode(bytes.NewReader(img))
	require.NoError(t, err, "the PNG must decode completely")
	assert.Equal(t, 1600, decoded.Bounds().Dx())
	assert.Equal(t, 1200, decoded.Bounds().Dy())
	t.Logf("screenshot: %d bytes PNG, %d bytes on the wire", len(img), len(raw))
}

func TestBackendCDPErrorReplyIsProtocolError(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	_, err := trySend(be, "No.suchMethod", nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrProtocol), "%v", err)
	assert.True(t, errors.Is(err, bb.ErrMethodNotFound), "%v", err)
	var e *bb.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "No.suchMethod", e.Method)
	assert.True(t, e.Dispatched)

	_, err = trySend(be, "Runtime.evaluate", map[string]any{"expression": 42})
	assert.True(t, errors.Is(err, bb.ErrInvalidParams), "%v", err)

	// The connection is still good after errors.
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendRejectsParamsThatAreNotJSON(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":`)})
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrPolicy), "%v", err)
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendKilledBrowserFailsInFlightCommandWithTransportError(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	send(t, be, "Runtime.enable", nil)
	consoles, cancel := be.Subscribe("Runtime.consoleAPICalled")
	defer cancel()

	// A command that never answers: the promise never resolves. Its
	// console.log proves the browser received the command before the kill.
	result := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // far away
		defer cancel()
		_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate",
			Params: json.RawMessage(`{"expression":"new Promise(() => console.log('waiting forever'))","awaitPromise":true}`)})
		result <- err
	}()
	select {
	case <-consoles:
	case <-time.After(20 * time.Second):
		t.Fatal("the command never reached the browser")
	}
	b.Kill()

	err := <-result // returns because the socket died, not because of a deadline
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrTransport), "%v", err)
	var e *bb.Error
	require.True(t, errors.As(err, &e))
	assert.True(t, e.Dispatched)
	assert.Equal(t, "Runtime.evaluate", e.Method)

	// Later commands fail at once too, and subscribers learn the session is gone.
	_, err = trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.True(t, errors.Is(err, bb.ErrTransport), "%v", err)
	<-be.Done()
}

func TestBackendKilledBrowserEmitsDetachAndClosesEvents(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	detached, cancel := be.Subscribe(bb.MethodTargetDetached)
	defer cancel()
	b.Kill()
	ev, ok := <-detached
	require.True(t, ok, "want a Target.detachedFromTarget before the channel closes")
	assert.Equal(t, be.SessionID(), ev.SessionID)
	_, ok = <-detached
	assert.False(t, ok, "the event channel closes once the socket is gone")
}

func TestBackendCloseLeavesBrowserAndTabsOpen(t *testing.T) {
	b := chromiumtest.Start(t)
	for range 2 { // two more tabs of "the user"
		req, _ := http.NewRequest(http.MethodPut, b.HTTPURL()+"/json/new?about:blank", nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	before := pageCount(t, b)
	require.Equal(t, 3, before)

	be := dialBrowser(t, b)
	assert.False(t, be.CreatedTarget(), "a browser with pages gets no new tab")
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "document.title = 'used by cdp-inspect'"})
	require.NoError(t, be.Close())
	require.NoError(t, be.Close(), "Close is idempotent")

	select {
	case <-b.Exited():
		t.Fatal("closing the backend ended the browser")
	default:
	}
	assert.Equal(t, before, pageCount(t, b), "every tab stays open")

	_, err := trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.True(t, errors.Is(err, bb.ErrClosed), "%v", err)

	// A second client can attach to the same browser afterwards.
	be2 := dialBrowser(t, b)
	send(t, be2, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendClosesOnlyTheTabItCreated(t *testing.T) {
	b := chromiumtest.Start(t)
	// Close the only tab, through a client attached to it (the client's
	// browser connection stays), and wait for its detach event.
	keep := dialBrowser(t, b)
	detached, stop := keep.Subscribe(bb.MethodTargetDetached)
	defer stop()
	send(t, keep, "Target.closeTarget", map[string]string{"targetId": keep.TargetID()})
	for ev := range detached {
		if ev.SessionID == keep.SessionID() {
			break
		}
	}
	require.Equal(t, 0, pageCount(t, b), "setup: want no page targets")

	be := dialBrowser(t, b)
	assert.True(t, be.CreatedTarget())
	assert.Equal(t, 1, pageCount(t, b))
	require.NoError(t, be.Close())
	assert.Equal(t, 0, pageCount(t, b), "the tab the backend opened is closed again")

	_, err := cdpinspect.Dial(context.Background(), cfgFor(b.Port), cdpinspect.WithUserDataDirs(), cdpinspect.WithCreateTarget(false))
	assertDiscoveryErr(t, err, bb.CodeNoTargets)
}

func TestBackendSessionGoneWhenTabClosed(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	detached, cancel := be.Subscribe(bb.MethodTargetDetached)
	defer cancel()
	resp, err := http.Get(b.HTTPURL() + "/json/close/" + be.TargetID())
	require.NoError(t, err)
	resp.Body.Close()
	ev := <-detached
	assert.Equal(t, be.SessionID(), ev.SessionID)
	_, err = trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.True(t, errors.Is(err, bb.ErrSessionNotFound), "%v", err)
	assert.True(t, errors.Is(err, bb.ErrTransport), "%v", err)
}

func TestBackendCommandWithoutDeadlineGetsOne(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b, cdpinspect.WithCommandTimeout(200*time.Millisecond))
	_, err := be.Send(context.Background(), bb.Command{Method: "Runtime.evaluate",
		Params: json.RawMessage(`{"expression":"new Promise(() => {})","awaitPromise":true}`)})
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrTimeout), "%v", err)
	var e *bb.Error
	require.True(t, errors.As(err, &e))
	assert.True(t, e.Dispatched, "outcome unknown")
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendCancelledSendIsAborted(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	send(t, be, "Runtime.enable", nil)
	consoles, stop := be.Subscribe("Runtime.consoleAPICalled")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate",
			Params: json.RawMessage(`{"expression":"new Promise(() => console.log('x'))","awaitPromise":true}`)})
		result <- err
	}()
	<-consoles
	cancel()
	err := <-result
	assert.True(t, errors.Is(err, bb.ErrAborted), "%v", err)
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendExplicitWebSocketURL(t *testing.T) {
	b := chromiumtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	be, err := cdpinspect.Dial(ctx, cfgFor(closedPort(t)), cdpinspect.WithWebSocketURL(b.BrowserWSURL))
	require.NoError(t, err)
	defer be.Close()
	assert.Equal(t, cdpinspect.SourceWebSocketURL, be.Endpoint().Source)
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
}

func TestBackendConcurrentSendsGetTheirOwnReplies(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	const n = 64
	errs := make(chan error, n)
	for i := range n {
		go func() {
			raw, err := trySend(be, "Runtime.evaluate", map[string]any{"expression": "(" + strconv.Itoa(i) + ") * 3", "returnByValue": true})
			if err != nil {
				errs <- err
				return
			}
			var res struct {
				Result struct {
					Value int `json:"value"`
				} `json:"result"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				errs <- err
				return
			}
			if res.Result.Value != i*3 {
				errs <- fmt.Errorf("call %d got %d", i, res.Result.Value)
				return
			}
			errs <- nil
		}()
	}
	for range n {
		assert.NoError(t, <-errs)
	}
}
