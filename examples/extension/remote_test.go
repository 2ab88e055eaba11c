package extension_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/remote"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/tlstest"
)

// seenRequest is one request as the remote listener received it.
type seenRequest struct {
	Method, RequestURI string
	Header             http.Header
	Body               []byte
	// Status and Answer are a renewal's answer (also when it was dropped).
	Status int
	Answer []byte
}

// remoteStack is the reference runtime with a remote listener over native
// TLS (a test certificate the browser trusts through its SPKI hash) and a
// headless Chromium that loaded the reference extension, not connected to
// anything until a pairing link is pasted into its popup.
type remoteStack struct {
	*stack
	srv      *remote.Server
	endpoint string
	client   *http.Client // trusts the test certificate

	mu   sync.Mutex
	seen []seenRequest
	// dropRenewals answers the first n renewals to the server, then drops
	// the answer (the connection is cut); each dropped one is sent on
	// dropped.
	dropRenewals int
	dropped      chan seenRequest
	renewed      chan seenRequest // every renewal that was answered
}

func startRemoteStack(t *testing.T, limits remote.Limits) *remoteStack {
	t.Helper()
	return startCappedRemoteStack(t, limits, 0)
}

// startCappedRemoteStack is startRemoteStack with the runtime's
// MaxBodyBytes (0: its default).
func startCappedRemoteStack(t *testing.T, limits remote.Limits, maxBody int64) *remoteStack {
	t.Helper()
	logs := &records{}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rt, err := runtime.New(runtime.Config{Key: key, AllowedOrigins: []string{ExtensionOrigin}, Logger: slog.New(logs),
		RequestTimeout: time.Minute, MaxBodyBytes: maxBody})
	require.NoError(t, err)
	t.Cleanup(func() { rt.Close() })

	dir := t.TempDir()
	cert := tlstest.Cert(t)
	spki := tlstest.SPKIHash(cert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	endpoint := "wss://" + ln.Addr().String() + "/extension"
	store, err := remote.OpenStore(filepath.Join(dir, "remote.db"), remote.StoreOptions{})
	require.NoError(t, err)
	srv, err := remote.New(remote.Options{Store: store, Proxy: rt.Proxy, Hub: rt.Hub, Endpoint: endpoint,
		Limits: limits, Logger: slog.New(logs), ServiceName: "test server"})
	require.NoError(t, err)
	rs := &remoteStack{srv: srv, endpoint: endpoint, dropped: make(chan seenRequest, 4), renewed: make(chan seenRequest, 64)}
	mux := http.NewServeMux()
	srv.Mount(mux)
	hs := remote.NewHTTPServer(rs.record(mux), nil, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, slog.New(logs))
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-served
		store.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", strings.Join(logs.matching(""), "\n"))
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	rs.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(rs.client.CloseIdleConnections)

	// The extension starts in local mode, paused: nothing connects until
	// the popup pairs it.
	ext := t.TempDir()
	require.NoError(t, installPaused(ext))
	browser := chromiumtest.Start(t, chromiumtest.WithExtension(ext),
		chromiumtest.WithArgs("--ignore-certificate-errors-spki-list="+spki))
	rs.stack = &stack{rt: rt, browser: browser, logs: logs, ids: make(chan string, 1), posted: make(chan struct{})}
	return rs
}

// installPaused installs the extension with a config.json that does not
// connect at start.
func installPaused(dst string) error {
	if err := extension.Install(".", dst, "http://127.0.0.1:1"); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "config.json"), []byte(`{"autoConnect":false}`), 0o644)
}

// record keeps every request the listener gets and drops renewal answers
// as dropRenewals asks.
func (rs *remoteStack) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sr := seenRequest{Method: r.Method, RequestURI: r.RequestURI, Header: r.Header.Clone()}
		if r.Method == http.MethodPost {
			sr.Body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<16))
			r.Body = io.NopCloser(bytes.NewReader(sr.Body))
		}
		renewal := bytes.Contains(sr.Body, []byte(`"action":"renew"`))
		rs.mu.Lock()
		drop := renewal && rs.dropRenewals > 0
		if drop {
			rs.dropRenewals--
		}
		rs.mu.Unlock()
		if renewal {
			// The real route answers into a recorder; the answer is then
			// copied out, or lost by cutting the connection.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			sr.Status, sr.Answer = rec.Code, rec.Body.Bytes()
			rs.add(sr)
			if drop {
				rs.dropped <- sr
				panic(http.ErrAbortHandler)
			}
			select {
			case rs.renewed <- sr:
			default: // nobody is looking for more
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		rs.add(sr)
		h.ServeHTTP(w, r) // the upgrade needs the original writer (http.Hijacker)
	})
}

func (rs *remoteStack) add(sr seenRequest) {
	rs.mu.Lock()
	rs.seen = append(rs.seen, sr)
	rs.mu.Unlock()
}

func (rs *remoteStack) requests() []seenRequest {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]seenRequest(nil), rs.seen...)
}

// upgrades returns the Sec-WebSocket-Protocol of every socket upgrade so far.
func (rs *remoteStack) upgrades() []string {
	var out []string
	for _, r := range rs.requests() {
		if r.RequestURI == "/extension" {
			out = append(out, r.Header.Get("Sec-WebSocket-Protocol"))
		}
	}
	return out
}

// pairInPopup creates a link, pastes it into the popup and waits until the
// popup shows the socket connected; it returns the popup, the link's secret
// and the device's hub client.
func (rs *remoteStack) pairInPopup(t *testing.T) (*extPage, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	link, err := rs.srv.CreateLink(ctx, rs.rt.Auth.ActorPrincipalID())
	require.NoError(t, err)
	_, secret, ok := strings.Cut(link.URL, "#")
	require.True(t, ok)
	popup := rs.openExtPage(t, "popup.html")
	popup.eval(t, fmt.Sprintf(`document.getElementById('link').value = %q; document.getElementById('pair').click(); true`, link.URL))
	rs.waitConnected(t, popup)
	assert.JSONEq(t, `""`, string(popup.eval(t, "document.getElementById('link').value")), "the popup forgets the link")
	return popup, secret
}

// waitConnected waits until the popup's state line says Connected; past
// the step deadline it fails with what the popup and the listener saw.
func (rs *remoteStack) waitConnected(t *testing.T, p *extPage) {
	t.Helper()
	got := p.eval(t, fmt.Sprintf(`new Promise((resolve) => {
		const el = document.getElementById('state');
		const check = () => { if (el.textContent === 'Connected') resolve('Connected'); };
		new MutationObserver(check).observe(document.body, {childList: true, characterData: true, subtree: true});
		check();
		setTimeout(() => resolve([el.textContent, document.getElementById('detail').textContent,
			document.getElementById('remote').textContent].join(' | ')), %d);
	})`, (stepTimeout-5*time.Second).Milliseconds()))
	if string(got) != `"Connected"` {
		var uris []string
		for _, r := range rs.requests() {
			uris = append(uris, r.Method+" "+r.RequestURI)
		}
		t.Fatalf("the popup did not show Connected: %s; requests: %v; worker: %s %s", got, uris,
			rs.workerEval(t, "vellumRemote.stats"), rs.workerEval(t, "vellumRemote.status()"))
	}
}

// waitContains resolves when the element's text contains want (a
// MutationObserver, not a poll).
func (p *extPage) waitContains(t *testing.T, id, want string) {
	t.Helper()
	p.eval(t, fmt.Sprintf(`new Promise((resolve) => {
		const el = document.getElementById(%q);
		const check = () => { if (el && el.textContent.includes(%q)) resolve(true); };
		new MutationObserver(check).observe(document.body, {childList: true, characterData: true, subtree: true});
		check();
	})`, id, want))
}

func (p *extPage) remoteText(t *testing.T) string {
	var s string
	require.NoError(t, json.Unmarshal(p.eval(t, "document.getElementById('remote').textContent"), &s))
	return s
}

// killWorker closes the extension's service worker target (Chrome ends the
// worker as it would an idle one) and waits until the device's socket is
// gone from the hub.
func (rs *remoteStack) killWorker(t *testing.T, clientID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c := dialCDP(t, rs.browser.BrowserWSURL)
	var targets struct {
		TargetInfos []struct{ TargetID, Type, URL string } `json:"targetInfos"`
	}
	require.NoError(t, c.call(ctx, "", "Target.getTargets", map[string]any{}, &targets))
	var id string
	for _, ti := range targets.TargetInfos {
		if ti.Type == "service_worker" && strings.HasPrefix(ti.URL, ExtensionOrigin+"/") {
			id = ti.TargetID
		}
	}
	require.NotEmpty(t, id, "no extension service worker")
	require.NoError(t, c.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id}, nil))
	rs.waitGone(t, clientID)
}

func (rs *remoteStack) run(t *testing.T, conv, expr string) runtime.CommandResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	p, _ := json.Marshal(map[string]any{"expression": expr, "returnByValue": true})
	cr, err := rs.rt.Run(ctx, runtime.CommandRequest{ConversationID: conv, BrowserMode: "extension",
		Method: "Runtime.evaluate", Params: p})
	require.NoError(t, err)
	require.Nil(t, cr.Error, "%+v", cr.Error)
	return cr
}

func evalValue(t *testing.T, raw json.RawMessage) any {
	var ev struct{ Result struct{ Value any } }
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev.Result.Value
}

func TestRemote_PairsWithALinkOverTLSAndServesAPinnedToolCall(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	popup, secret := rs.pairInPopup(t)
	dev := rs.waitExtension(t)

	cr := rs.run(t, "remote-first-use", "6*7")
	assert.Equal(t, browserbackend.KindExtension, cr.Backend)
	assert.EqualValues(t, 42, evalValue(t, cr.Result))

	devices, err := rs.srv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devices, 1)
	assert.Equal(t, dev.ClientID, devices[0].BrowserID)
	assert.Equal(t, "Chrome on linux", devices[0].Label)
	popup.waitContains(t, "remote", "Connected to test server.")
	assert.Contains(t, popup.remoteText(t), "Authorized until")

	// The secret travelled once, only as the pairing exchange's bearer.
	var bearers int
	for _, r := range rs.requests() {
		assert.NotContains(t, r.RequestURI, secret, "%s %s", r.Method, r.RequestURI)
		assert.NotContains(t, string(r.Body), secret)
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, secret) {
					assert.Equal(t, "Authorization", k)
					assert.Equal(t, "Bearer "+secret, v)
					assert.Equal(t, "/extension/authorize", r.RequestURI)
					assert.Contains(t, string(r.Body), `"action":"pair"`)
					bearers++
				}
			}
		}
	}
	assert.Equal(t, 1, bearers)
	upgrades := 0
	for _, r := range rs.requests() {
		if r.RequestURI == "/extension" {
			upgrades++
			assert.Len(t, r.Header.Values("Sec-WebSocket-Protocol"), 1)
			assert.Regexp(t, `^bsk-auth\.[A-Za-z0-9_-]{43}$`, r.Header.Get("Sec-WebSocket-Protocol"))
			assert.Equal(t, ExtensionOrigin, r.Header.Get("Origin"))
		}
	}
	assert.Equal(t, 1, upgrades)

	// The link works once.
	req, _ := http.NewRequest(http.MethodPost, "https"+strings.TrimPrefix(rs.endpoint, "wss")+"/authorize",
		strings.NewReader(`{"action":"pair","next_token":"`+remote.NewToken()+`","label":"again"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := rs.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// The credential is in IndexedDB; chrome.storage holds only the mode
	// and a revision.
	var grant struct{ Token, DeviceID string }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.grant()"), &grant))
	assert.Len(t, grant.Token, 43)
	assert.Equal(t, devices[0].DeviceID, grant.DeviceID)
	local := string(rs.workerEval(t, "chrome.storage.local.get(null)"))
	assert.NotContains(t, local, grant.Token)
	var settings struct {
		Settings struct {
			Mode           string
			RemoteRevision int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(local), &settings))
	assert.Equal(t, "remote", settings.Settings.Mode)
	assert.Equal(t, 1, settings.Settings.RemoteRevision)
}

func TestRemote_LostRenewalAnswerCompletesAfterTheWorkerIsKilled(t *testing.T) {
	// Renewal is due five seconds after pairing or renewing. Once the socket
	// is open, the next renewal reaches the server, which commits it, but
	// its answer is lost.
	rs := startRemoteStack(t, remote.Limits{DeviceTTL: time.Hour, RenewAfter: 5 * time.Second})
	rs.pairInPopup(t)
	dev := rs.waitExtension(t)
	rs.mu.Lock()
	rs.dropRenewals = 1
	rs.mu.Unlock()

	var lost seenRequest
	select {
	case lost = <-rs.dropped:
	case <-timeout():
		t.Fatal("the extension did not renew")
	}
	require.Equal(t, http.StatusOK, lost.Status, "the server committed the renewal")

	rs.killWorker(t, dev.ClientID)
	before := len(rs.upgrades())
	// The old token no longer opens a socket: only the pending one can.
	popup := rs.openExtPage(t, "popup.html") // wakes the worker
	var retry seenRequest
	for deadline := timeout(); !bytes.Equal(retry.Body, lost.Body); {
		select {
		case retry = <-rs.renewed: // earlier renewals are skipped
		case <-deadline:
			t.Fatal("the restarted worker did not retry the renewal with the same next_token")
		}
	}
	assert.Equal(t, lost.Header.Get("Authorization"), retry.Header.Get("Authorization"), "the same old token")
	assert.Equal(t, http.StatusOK, retry.Status)
	assert.JSONEq(t, string(lost.Answer), string(retry.Answer), "an exact retry gets the first answer")

	again := rs.waitExtension(t)
	assert.Equal(t, dev.ClientID, again.ClientID, "the same device")
	rs.waitConnected(t, popup)
	var body struct {
		NextToken string `json:"next_token"`
	}
	require.NoError(t, json.Unmarshal(lost.Body, &body))
	upgrades := rs.upgrades()
	require.Greater(t, len(upgrades), before)
	assert.Equal(t, "bsk-auth."+body.NextToken, upgrades[before], "the restarted worker dialed with the pending token")
	cr := rs.run(t, "remote-renewed", "'renewed'")
	assert.Equal(t, "renewed", evalValue(t, cr.Result))
}

func TestRemote_RevocationClosesTheSocketAndFailsTheCommandInFlight(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	fx := startFixtures(t)
	popup, _ := rs.pairInPopup(t)
	dev := rs.waitExtension(t)
	devices, err := rs.srv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devices, 1)

	c := rs.rt.Selector.Client(browserbackend.Invocation{ConversationID: "remote-revoke", InterfaceID: "cli",
		ActorPrincipalID: rs.rt.Auth.ActorPrincipalID(), Mode: browserbackend.Mode("extension")})
	defer c.Close()
	res := sendAsync(context.Background(), c, "Runtime.evaluate", fx.gatedEval("revoke", 1))
	waitClosed(t, fx.gate("revoke").started, "the page to start the command")

	gone := rs.rt.Hub.Gone(dev.ClientID)
	require.NoError(t, rs.srv.Revoke(context.Background(), devices[0].DeviceID))
	r := waitResult(t, res)
	require.Error(t, r.err)
	assert.ErrorIs(t, r.err, browserbackend.ErrTransport)
	waitClosed(t, gone, "the socket to close")
	popup.waitText(t, "state", "Action required: pairing refused")
	popup.waitContains(t, "remote", "Pair again") // the remote part re-renders on its own answer
	assert.False(t, mustBool(t, rs.workerEval(t, "vellumRemote.isConnected()")))
	var settings struct{ Settings struct{ Mode string } }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "chrome.storage.local.get('settings')"), &settings))
	assert.Equal(t, "remote", settings.Settings.Mode, "a refused device never falls back to local")
}

func TestRemote_ReconnectAfterAWorkerRestartReplaysNoCommand(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	fx := startFixtures(t)
	rs.pairInPopup(t)
	dev := rs.waitExtension(t)

	c := rs.rt.Selector.Client(browserbackend.Invocation{ConversationID: "remote-replay", InterfaceID: "cli",
		ActorPrincipalID: rs.rt.Auth.ActorPrincipalID(), Mode: browserbackend.Mode("extension")})
	defer c.Close()
	res := sendAsync(context.Background(), c, "Runtime.evaluate", fx.gatedEval("replay", 1))
	waitClosed(t, fx.gate("replay").started, "the page to start the command")
	var claims map[string]struct{ Conv, Kind string }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "chrome.storage.session.get('remoteTabs').then((x) => x.remoteTabs)"), &claims))
	require.Len(t, claims, 1, "the conversation's background tab is the task's")

	rs.killWorker(t, dev.ClientID)
	r := waitResult(t, res)
	require.Error(t, r.err)
	assert.ErrorIs(t, r.err, browserbackend.ErrTransport, "the socket's command in flight fails")
	close(fx.gate("replay").release)

	popup := rs.openExtPage(t, "popup.html") // wakes the worker
	rs.waitConnected(t, popup)
	rs.waitExtension(t)
	// The restarted worker released the claims the killed one left (REM-8).
	rs.workerEval(t, "vellumRemote.whenReleased(1)")
	for id, c := range claims {
		assert.Equal(t, "created", c.Kind)
		assert.Equal(t, "false", string(rs.workerEval(t, "chrome.tabs.query({}).then((ts) => ts.some((x) => String(x.id) === "+strconv.Quote(id)+"))")),
			"the tab the killed worker's task created is closed")
	}
	cr := rs.run(t, "remote-after", "'fresh'")
	assert.Equal(t, "fresh", evalValue(t, cr.Result))
	var stats struct{ Requests, Connects int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.stats"), &stats))
	assert.Equal(t, 1, stats.Connects)
	assert.Equal(t, 3, stats.Requests, "the new socket carried only the new conversation's commands: its tab (Vellum.createTab, Vellum.attach) and the evaluate")
}

func mustBool(t *testing.T, raw json.RawMessage) bool {
	var b bool
	require.NoError(t, json.Unmarshal(raw, &b))
	return b
}

// TestRemote_AnAnswerOverTheCapFailsAsPayloadTooLargeAndTheSocketStaysUp:
// the remote socket's ready frame carries the server's cap; the extension
// answers a bigger result with payload_too_large itself, so that call fails
// typed and the next call on the same device is served by the same socket
// (no new handshake, no reconnect).
func TestRemote_AnAnswerOverTheCapFailsAsPayloadTooLargeAndTheSocketStaysUp(t *testing.T) {
	const maxBody = 256 << 10
	rs := startCappedRemoteStack(t, remote.Limits{}, maxBody)
	rs.pairInPopup(t)
	dev := rs.waitExtension(t)
	handshakes := len(rs.upgrades())
	require.Equal(t, 1, handshakes)

	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	p, _ := json.Marshal(map[string]any{"expression": `"x".repeat(2 * 256 * 1024)`, "returnByValue": true})
	_, err := rs.rt.Run(ctx, runtime.CommandRequest{ConversationID: "remote-big", BrowserMode: "extension",
		Method: "Runtime.evaluate", Params: p})
	require.Error(t, err, "an answer over the cap is not delivered")
	assert.ErrorIs(t, err, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodePayloadTooLarge})

	next := rs.run(t, "remote-big", "6*7")
	assert.EqualValues(t, 42, evalValue(t, next.Result))
	assert.Equal(t, handshakes, len(rs.upgrades()), "the socket was not reopened")
	var stats struct{ Dials, Connects, ResultsTooLarge int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.stats"), &stats))
	assert.Equal(t, 1, stats.Dials)
	assert.Equal(t, 1, stats.Connects)
	assert.Equal(t, 1, stats.ResultsTooLarge, "the extension refused the result itself")
	assert.Equal(t, dev.ClientID, rs.waitExtension(t).ClientID)
	assert.Empty(t, rs.logs.matching("over the body limit"), "the server never cut a frame")
}
