package cdpinspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// A tab closed by the user while a command waits on its session: the
// command fails with ErrSessionNotFound instead of waiting for its deadline.
func TestBackendTabClosedMidCommandFailsPendingCommandWithSessionNotFound(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	send(t, be, "Runtime.enable", nil)
	consoles, stop := be.Subscribe("Runtime.consoleAPICalled")
	defer stop()
	result := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate",
			Params: json.RawMessage(`{"expression":"new Promise(() => console.log('waiting'))","awaitPromise":true}`)})
		result <- err
	}()
	<-consoles
	resp, err := http.Get(b.HTTPURL() + "/json/close/" + be.TargetID())
	require.NoError(t, err)
	resp.Body.Close()
	err = <-result
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrSessionNotFound), "%v", err)
	assert.True(t, errors.Is(err, bb.ErrTransport), "%v", err)
}

// A hung (SIGSTOPped) browser: a command ends at its deadline with timeout,
// and Close still returns.
func TestBackendStoppedBrowserTimesOutAndCloseReturns(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "1"})
	require.NoError(t, syscall.Kill(-b.PID, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(-b.PID, syscall.SIGCONT) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	assert.True(t, errors.Is(err, bb.ErrTimeout), "%v", err)
	require.NoError(t, be.Close())
	_, err = trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.True(t, errors.Is(err, bb.ErrClosed), "%v", err)
}

// fakeBrowser serves one WebSocket that answers the attach sequence and then
// hands every later command to script.
func fakeBrowser(t *testing.T, script func(ctx context.Context, ws *websocket.Conn, id int64, method string)) string {
	srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var f struct {
				ID     int64  `json:"id"`
				Method string `json:"method"`
			}
			_ = json.Unmarshal(data, &f)
			reply := func(res string) {
				_ = ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+itoa(f.ID)+`,"result":`+res+`}`))
			}
			switch f.Method {
			case "Target.getTargets":
				reply(`{"targetInfos":[{"targetId":"T1","type":"page","url":"about:blank"}]}`)
			case "Target.attachToTarget":
				reply(`{"sessionId":"S1"}`)
			case "Runtime.runIfWaitingForDebugger", "Target.detachFromTarget", "Inspector.enable":
				reply(`{}`)
			default:
				script(ctx, ws, f.ID, f.Method)
			}
		}
	}))
	return "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/devtools/browser/fake"
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestBackendSurvivesMalformedFramesAndAnswersTheRightCall(t *testing.T) {
	wsURL := fakeBrowser(t, func(ctx context.Context, ws *websocket.Conn, id int64, method string) {
		for _, junk := range []string{
			`not json`, `{"id":`, `[]`, `{"id":999999,"result":{}}`, `{"id":-1,"result":{}}`,
			`{"id":123456789012345678901234567890,"result":{}}`, `{"id":"x"}`, `{"method":""}`, `null`, `{}`,
			`{"method":"Some.event","params":"notobject"}`,
		} {
			_ = ws.Write(ctx, websocket.MessageText, []byte(junk))
		}
		_ = ws.Write(ctx, websocket.MessageBinary, []byte{0xff, 0x00})
		// the real reply, then a duplicate
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+itoa(id)+`,"result":{"ok":`+`"`+method+`"}}`))
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+itoa(id)+`,"result":{"ok":"dup"}}`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	be, err := cdpinspect.Dial(ctx, cfgFor(closedPort(t)), cdpinspect.WithWebSocketURL(wsURL))
	require.NoError(t, err)
	defer be.Close()
	for _, m := range []string{"A.one", "B.two", "C.three"} {
		res, err := be.Send(ctx, bb.Command{Method: m})
		require.NoError(t, err)
		assert.JSONEq(t, `{"ok":"`+m+`"}`, string(res))
	}
}

func TestBackendReplyWithoutResultOrErrorIsEmptyResult(t *testing.T) {
	wsURL := fakeBrowser(t, func(ctx context.Context, ws *websocket.Conn, id int64, method string) {
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+itoa(id)+`}`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	be, err := cdpinspect.Dial(ctx, cfgFor(closedPort(t)), cdpinspect.WithWebSocketURL(wsURL))
	require.NoError(t, err)
	defer be.Close()
	res, err := be.Send(ctx, bb.Command{Method: "X.y"})
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(res))
}

func TestBackendErrorReplyWithNullErrorObject(t *testing.T) {
	wsURL := fakeBrowser(t, func(ctx context.Context, ws *websocket.Conn, id int64, method string) {
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+itoa(id)+`,"error":{"code":-32000}}`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	be, err := cdpinspect.Dial(ctx, cfgFor(closedPort(t)), cdpinspect.WithWebSocketURL(wsURL))
	require.NoError(t, err)
	defer be.Close()
	_, err = be.Send(ctx, bb.Command{Method: "X.y"})
	assert.True(t, errors.Is(err, bb.ErrProtocol), "%v", err)
}

// An event flood with a subscriber that never reads does not block commands.
func TestBackendEventFloodWithStalledSubscriberDoesNotBlockCommands(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	stalled, stop := be.Subscribe("")
	defer stop()
	_ = stalled
	send(t, be, "Runtime.enable", nil)
	send(t, be, "Runtime.evaluate", map[string]any{"expression": "for (let i = 0; i < 5000; i++) console.log('x'+i); 1"})
	res := send(t, be, "Runtime.evaluate", map[string]any{"expression": "2+2", "returnByValue": true})
	assert.Contains(t, string(res), "4")
}

// Sends racing Close from many goroutines: every call returns a result or a
// typed error, and nothing leaks (goleak in TestMain).
func TestBackendConcurrentSendsAndCloseAllReturnTyped(t *testing.T) {
	b := chromiumtest.Start(t)
	be := dialBrowser(t, b)
	const n = 100
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			if i == n/2 {
				errs <- be.Close()
				return
			}
			_, err := trySend(be, "Runtime.evaluate", map[string]any{"expression": "1+1"})
			errs <- err
		}()
	}
	close(start)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			var e *bb.Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			assert.Contains(t, []bb.Class{bb.ClassClosed, bb.ClassTransport}, e.Class, "%v", err)
		}
	}
	_, err := trySend(be, "Runtime.evaluate", map[string]any{"expression": "1"})
	assert.True(t, errors.Is(err, bb.ErrClosed), "%v", err)
}

// A browser that dies during Dial's attach: Dial fails at once with a
// transport error (failover material) and leaves nothing open.
func TestDialBrowserGoneDuringAttachIsTransportError(t *testing.T) {
	srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		_, data, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var f struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(data, &f)
		_ = ws.Write(r.Context(), websocket.MessageText,
			[]byte(`{"id":`+itoa(f.ID)+`,"result":{"targetInfos":[{"targetId":"T1","type":"page","url":"about:blank"}]}}`))
		_, _, _ = ws.Read(r.Context()) // Target.attachToTarget: the browser "dies" instead of answering
	}))
	wsURL := "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/devtools/browser/fake"
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := cdpinspect.Dial(ctx, cfgFor(closedPort(t)), cdpinspect.WithWebSocketURL(wsURL))
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrTransport), "%v", err)
}
