package cdpinspect_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// sessionView is a minimal cdp.Session over the backend, standing in for the
// per-invocation browserbackend.Client: Call marshals params with cdproto's
// jsonv2, sends on the page session and decodes the result; Subscribe
// forwards the backend's events of that session.
type sessionView struct{ be *cdpinspect.Backend }

func (s sessionView) Call(ctx context.Context, method string, params, result any) error {
	var raw json.RawMessage
	if params != nil {
		b, err := jsonv2.Marshal(params)
		if err != nil {
			return err
		}
		raw = b
	}
	res, err := s.be.Send(ctx, bb.Command{Method: method, Params: raw})
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	return jsonv2.Unmarshal(res, result)
}

func (s sessionView) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	events, cancel := s.be.Subscribe(method)
	out := make(chan jsonv2.Value, 16)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(out)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.SessionID != s.be.SessionID() {
					continue
				}
				select {
				case out <- jsonv2.Value(ev.Params):
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { cancel(); close(done); <-finished }
}

var _ cdp.Session = sessionView{}

func TestTypedCDProtoCallsAndEventsRunOnBackend(t *testing.T) {
	b := chromiumtest.Start(t)
	srv := chromiumtest.FixtureServer(t, nil)
	s := sessionView{dialBrowser(t, b)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := cdp.Call(ctx, s, page.Enable, page.EnableParams{})
	require.NoError(t, err)
	loads := cdp.Events(ctx, s, page.LoadEventFired) // subscribed from here on
	nav, err := cdp.Call(ctx, s, page.Navigate, page.NavigateParams{URL: srv.URL + "/"})
	require.NoError(t, err)
	assert.Empty(t, nav.ErrorText)
	for ev, err := range loads {
		require.NoError(t, err)
		assert.NotZero(t, ev.Timestamp)
		break
	}

	res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.getElementById('h').textContent", ReturnByValue: new(true)})
	require.NoError(t, err)
	require.Nil(t, res.ExceptionDetails)
	var text string
	require.NoError(t, json.Unmarshal(res.Result.Value, &text))
	assert.Equal(t, "Hello, fixture", text)

	shot, err := cdp.Call(ctx, s, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(shot.Data[:4]))
}
