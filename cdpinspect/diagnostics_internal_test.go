package cdpinspect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// testClock is a clock the test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// silentPage is a browser WebSocket that answers the attach sequence and
// never answers anything else; each unanswered method is reported on got.
func silentPage(t *testing.T, got chan<- string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			_, data, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			var f frame
			_ = json.Unmarshal(data, &f)
			res := ""
			switch f.Method {
			case "Target.getTargets":
				res = `{"targetInfos":[{"targetId":"T1","type":"page","url":"about:blank"}]}`
			case "Target.createTarget":
				res = `{"targetId":"T1"}`
			case "Target.attachToTarget":
				res = `{"sessionId":"S1"}`
			case "Runtime.runIfWaitingForDebugger", "Page.enable", "Inspector.enable", "Target.detachFromTarget":
				res = `{}`
			default:
				got <- f.Method
				continue
			}
			_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"id":`+strconv.FormatInt(f.ID, 10)+`,"result":`+res+`}`))
		}
	}))
	t.Cleanup(srv.Close)
	return "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/devtools/browser/x"
}

// A command that times out carries the connection's diagnostics, on the
// injected clock: both commands in flight, the oldest one's age, the time
// since the last answer (the attach) and the connection's uptime.
func TestTimeoutCarriesConnectionDiagnostics(t *testing.T) {
	got := make(chan string, 4)
	wsURL := silentPage(t, got)
	clk := &testClock{t: time.Unix(1000, 0)}
	s := newSettings([]Option{WithWebSocketURL(wsURL)})
	s.now, s.probeTimeout = clk.now, 5*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Host = "127.0.0.1"
	b, err := dial(ctx, cfg, s)
	require.NoError(t, err)
	<-b.resumed // every attach answer is in

	first := make(chan error, 1)
	go func() {
		_, err := b.Send(ctx, bb.Command{Method: "Slow.first"})
		first <- err
	}()
	require.Equal(t, "Slow.first", <-got)
	clk.advance(3 * time.Second)

	short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
	defer cancelShort()
	_, err = b.Send(short, bb.Command{Method: "Slow.second"})
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.ClassTimeout, e.Class)
	require.NotNil(t, e.Diagnostics, "a timeout says what the connection was doing")
	assert.Equal(t, bb.Diagnostics{InFlight: 2, OldestInFlight: 3 * time.Second, SinceLastAnswer: 3 * time.Second, Uptime: 3 * time.Second},
		*e.Diagnostics)
	assert.Contains(t, err.Error(), "2 in flight, oldest 3s, last answer 3s ago, up 3s")

	require.NoError(t, b.Close())
	assert.ErrorIs(t, <-first, bb.ErrClosed)
}

// withClock sets the clock of timeout diagnostics (tests only).
func withClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }

// A deadline that passes while a Build waits, before its command could be
// sent (here: for the conversation's tab, which another call holds), is a
// timeout that says the command was never sent and what it waited for,
// with the provider's diagnostics on the injected clock: nothing in flight,
// no connection up (DialConversation's sockets are their own), and the time
// since the provider's last connection answered.
func TestTimeoutBeforeSendCarriesProviderDiagnostics(t *testing.T) {
	wsURL := silentPage(t, make(chan string, 4))
	clk := &testClock{t: time.Unix(1000, 0)}
	cfg := DefaultConfig()
	cfg.Host, cfg.Enabled = "127.0.0.1", true
	p := NewProvider(cfg, WithWebSocketURL(wsURL), withClock(clk.now))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first, err := p.DialConversation(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	<-first.resumed // every attach answer is in: the last answer
	require.NoError(t, first.Close())
	clk.advance(4 * time.Second)

	unlock, err := p.tabs.lock(ctx, "conv") // another call picks the tab
	require.NoError(t, err)
	defer unlock()
	short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
	defer cancelShort()
	_, err = p.DialConversation(short, "conv", bb.TabRequest{})
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.ClassTimeout, e.Class)
	assert.False(t, e.Dispatched, "never sent")
	require.NotNil(t, e.Diagnostics)
	assert.Equal(t, bb.Diagnostics{SinceLastAnswer: 4 * time.Second}, *e.Diagnostics)
	assert.Equal(t, "browserbackend: cdp-inspect timeout: deadline passed before the command was sent, waiting for the conversation's tab, which another call of the conversation holds (0 in flight, last answer 4s ago, not up): context deadline exceeded", err.Error())
}

// A Build over the shared connection whose deadline passes while another
// call of the conversation holds its tab says so, with the diagnostics of
// that connection, which is up: the other call's command in flight, its
// age, the time since the last answer and the connection's uptime (not
// "not up", as when no connection was open).
func TestTimeoutWaitingForTheTabCarriesTheSharedConnectionsDiagnostics(t *testing.T) {
	got := make(chan string, 4)
	wsURL := silentPage(t, got)
	clk := &testClock{t: time.Unix(1000, 0)}
	cfg := DefaultConfig()
	cfg.Host, cfg.Enabled = "127.0.0.1", true
	p := NewProvider(cfg, WithWebSocketURL(wsURL), withClock(clk.now))
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	b, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, p.built(ctx, b, err))
	defer b.Close()
	<-p.sc.session("conv").resumed // every attach answer is in: the last answer
	sent := make(chan error, 1)
	go func() {
		_, err := b.Send(ctx, bb.Command{Method: "Slow.first"})
		sent <- err
	}()
	require.Equal(t, "Slow.first", <-got)
	clk.advance(2 * time.Second)

	unlock, err := p.tabs.lock(ctx, "conv") // the call that holds the tab
	require.NoError(t, err)
	short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
	defer cancelShort()
	again, err := p.build(short, "conv", bb.TabRequest{})
	err = p.built(short, again, err)
	unlock()
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.ClassTimeout, e.Class)
	assert.False(t, e.Dispatched, "never sent")
	require.NotNil(t, e.Diagnostics)
	assert.Equal(t, bb.Diagnostics{InFlight: 1, OldestInFlight: 2 * time.Second, SinceLastAnswer: 2 * time.Second, Uptime: 2 * time.Second}, *e.Diagnostics)
	assert.Equal(t, "browserbackend: cdp-inspect timeout: deadline passed before the command was sent, waiting for the conversation's tab, which another call of the conversation holds (1 in flight, oldest 2s, last answer 2s ago, up 2s): context deadline exceeded", err.Error())

	require.NoError(t, b.Close())
	<-sent
}
