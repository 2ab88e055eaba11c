package remote

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// authorizeFromLink is what the extension does with a pasted link: the
// fragment is cut off before any request and sent only as the bearer
// credential to wss→https://HOST/PATH/authorize.
func authorizeFromLink(t *testing.T, f *fixture, link, next string) *http.Response {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	secret := u.Fragment
	u.Fragment, u.Scheme = "", strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path += "/authorize"
	body, _ := json.Marshal(authorizeRequest{Action: "pair", NextToken: next, Label: "laptop"})
	req, err := http.NewRequest(http.MethodPost, u.String(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	client := *f.http.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse } // the extension refuses redirects
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// TestPair_LinkOverTLSOnceNeverSendingTheFragment: a link over TLS pairs a
// device whose token then opens the socket; the secret never appears in a
// request line or Referer; the link works once; an expired link fails
// (REM-1, REM-2, REM-4).
func TestPair_LinkOverTLSOnceNeverSendingTheFragment(t *testing.T) {
	f := newFixture(t, fixtureOpts{tls: true})
	link, secret := f.link("user-7")
	require.True(t, strings.HasPrefix(link.URL, "wss://127.0.0.1:"), link.URL)
	assert.Len(t, secret, 43)

	token := NewToken()
	f.remember(token)
	resp := authorizeFromLink(t, f, link.URL, token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Values("Set-Cookie"))
	assert.True(t, resp.Close, "the answer closes its connection")

	d := f.dial(token)
	assert.Regexp(t, `^[0-9a-f]{32}$`, d.deviceID)
	devs, err := f.srv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 1)
	assert.Equal(t, d.deviceID, devs[0].DeviceID)
	assert.Equal(t, d.clientID, devs[0].BrowserID)
	assert.Equal(t, "user-7", devs[0].Actor)
	assert.Equal(t, "laptop", devs[0].Label)

	// Once only.
	again := NewToken()
	assert.Equal(t, http.StatusUnauthorized, authorizeFromLink(t, f, link.URL, again).StatusCode)

	// Expired.
	late, _ := f.link("user-7")
	f.clock.Add(DefaultPairingTTL + time.Second)
	assert.Equal(t, http.StatusUnauthorized, authorizeFromLink(t, f, late.URL, NewToken()).StatusCode)

	for _, line := range f.seen() {
		assert.NotContains(t, line, secret)
		assert.NotContains(t, line, token)
	}
}

// TestAuthorize_AnswerShape: the 200 answer has a 32-hex device id, RFC 3339
// expiry and renew-after from the limits, and the service name (REM-2).
func TestAuthorize_AnswerShape(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	_, secret := f.link("a")
	next := NewToken()
	f.remember(next)
	resp, out := f.authorize(secret, "pair", next)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Regexp(t, `^[0-9a-f]{32}$`, out.DeviceID)
	assert.Equal(t, f.clock.Now().Add(DefaultDeviceTTL).Format(time.RFC3339), out.ExpiresAt)
	assert.Equal(t, f.clock.Now().Add(DefaultRenewAfter).Format(time.RFC3339), out.RenewAfter)
	assert.Equal(t, "test service", out.ServiceName)

	// A malformed next_token, an unknown action, a query string, GET.
	_, s2 := f.link("a")
	r, _ := f.authorize(s2, "pair", "short")
	assert.Equal(t, http.StatusBadRequest, r.StatusCode)
	r, _ = f.authorize(s2, "steal", NewToken())
	assert.Equal(t, http.StatusBadRequest, r.StatusCode)
	q, err := http.Post(f.authorizeURL()+"?token="+s2, "application/json", strings.NewReader(`{"action":"pair"}`))
	require.NoError(t, err)
	q.Body.Close()
	assert.Equal(t, http.StatusBadRequest, q.StatusCode)
	big, err := http.NewRequest(http.MethodPost, f.authorizeURL(), strings.NewReader(`{"label":"`+strings.Repeat("x", 5000)+`"}`))
	require.NoError(t, err)
	big.Header.Set("Authorization", "Bearer "+s2)
	br, err := http.DefaultClient.Do(big)
	require.NoError(t, err)
	br.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, br.StatusCode)
	// The link survived the refused exchanges.
	next2 := NewToken()
	f.remember(next2)
	r, _ = f.authorize(s2, "pair", next2)
	assert.Equal(t, http.StatusOK, r.StatusCode)
}

// TestSocket_IsAnOrdinaryHubClientServingTheExtensionCandidate: a device on
// the remote socket is in the hub roster as a chrome-extension client of
// its actor, and a selector's auto invocation for that actor runs a command
// on it through the extension candidate (REM-4, HUB-1).
func TestSocket_IsAnOrdinaryHubClientServingTheExtensionCandidate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("user-7")
	d := f.dial(token)
	assert.Equal(t, deviceID, d.deviceID)
	info, ok := f.hub.Client(d.clientID)
	require.True(t, ok)
	assert.Equal(t, wire.InterfaceChromeExtension, info.InterfaceID)
	assert.Equal(t, "user-7", info.ActorPrincipalID)
	assert.Equal(t, "test laptop", info.MachineName)
	assert.Equal(t, []string{deviceID}, f.srv.Online())

	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{f.proxy.ExtensionProvider(hostproxy.ProviderOptions{})},
		Logger:    f.log,
	})
	client := sel.Client(browserbackend.Invocation{ConversationID: "c1", InterfaceID: "web", ActorPrincipalID: "user-7", Mode: browserbackend.ModeAuto})
	defer client.Close()

	go func() {
		for {
			req := d.nextRequest()
			switch req.CDPMethod {
			case "Runtime.evaluate":
				d.answer(req.RequestID, `{"result":{"type":"string","value":"from remote"}}`)
				return
			case wire.MethodCreateTab: // the conversation's tab
				d.answer(req.RequestID, `{"tabId":7}`)
			default:
				d.answer(req.RequestID, `{}`)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := client.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"type":"string","value":"from remote"}}`, string(res))
	assert.Equal(t, browserbackend.KindExtension, client.Kind())
}

// TestSocket_AnotherDevicesIDGetsNoneOfItsWork: a device that names another
// device's browser id is refused, cannot answer that device's request, and
// receives none of its work (REM-4).
func TestSocket_AnotherDevicesIDGetsNoneOfItsWork(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tokA, _ := f.pair("user-7")
	tokB, _ := f.pair("user-7")
	a, b := f.dial(tokA), f.dial(tokB)
	require.NotEqual(t, a.clientID, b.clientID)

	b.send(map[string]any{"type": wire.RemoteHello, "clientId": a.clientID})
	fr := b.next()
	assert.Equal(t, "client_mismatch", fr.Code)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type out struct {
		res json.RawMessage
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := f.proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: a.clientID, SourceActor: "user-7"})
		done <- out{res, err}
	}()
	req := a.nextRequest()
	// B answering A's request is refused, however it names itself.
	b.send(map[string]any{"type": wire.SocketResult, "requestId": req.RequestID, "content": `{"stolen":true}`})
	fr = b.next()
	assert.Equal(t, wire.SocketError, fr.Type)
	assert.Equal(t, "client_mismatch", fr.Code, "answering another device's work is refused as naming it is")
	b.send(map[string]any{"type": wire.SocketResult, "clientId": a.clientID, "requestId": req.RequestID, "content": `{"stolen":true}`})
	assert.Equal(t, "client_mismatch", b.next().Code)
	// Each refused frame is one log line (written before its reply), not
	// one from the socket and another from the shared frame handler.
	assert.Equal(t, 2, strings.Count(f.logs.String(), "names another client"), f.logs.String())
	a.answer(req.RequestID, `{"mine":true}`)
	assert.Equal(t, wire.SocketAccepted, a.next().Type)
	o := <-done
	require.NoError(t, o.err)
	assert.JSONEq(t, `{"mine":true}`, string(o.res))

	// B's first hub event is its own request, not A's.
	go func() {
		_, _ = f.proxy.Request(ctx, hostproxy.Req{Method: "Page.enable", TargetClientID: b.clientID})
	}()
	got := b.nextRequest()
	assert.Equal(t, "Page.enable", got.CDPMethod)
	b.answer(got.RequestID, `{}`)
}

// TestRenew_RetryIdempotentConflictRefusedLostAnswerCompletesAfterRestart:
// an exact retry returns the original answer, a different next token for
// the same old one is refused, a retry after a server and store restart
// still completes, and the old token opens no socket (REM-3).
func TestRenew_RetryIdempotentConflictRefusedLostAnswerCompletesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, fixtureOpts{dir: dir})
	old, deviceID := f.pair("u")
	live := f.dial(old)

	next := NewToken()
	f.remember(next)
	f.clock.Add(time.Hour)
	r1, a1 := f.authorize(old, "renew", next)
	require.Equal(t, http.StatusOK, r1.StatusCode)
	assert.Equal(t, deviceID, a1.DeviceID)

	f.clock.Add(time.Minute)
	r2, a2 := f.authorize(old, "renew", next)
	require.Equal(t, http.StatusOK, r2.StatusCode)
	assert.Equal(t, a1, a2, "an exact retry returns the original answer")

	other := NewToken()
	f.remember(other)
	r3, _ := f.authorize(old, "renew", other)
	assert.Equal(t, http.StatusConflict, r3.StatusCode)

	// The old token opens no new socket; the socket it opened stays.
	_, resp, err := f.dialRaw("/extension", []string{wire.SubprotocolAuthPrefix + old}, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, []string{deviceID}, f.srv.Online())
	_ = live

	// The answer was lost and the server restarted: a second server on the
	// same store file answers the retry the same way.
	f2 := newFixture(t, fixtureOpts{dir: dir, endpoint: f.srv.Endpoint(), peer: f})
	r4, a4 := f2.authorize(old, "renew", next)
	require.Equal(t, http.StatusOK, r4.StatusCode)
	assert.Equal(t, a1, a4)

	// Revocation invalidates retries.
	require.NoError(t, f.srv.Revoke(context.Background(), deviceID))
	r5, _ := f.authorize(old, "renew", next)
	assert.Equal(t, http.StatusUnauthorized, r5.StatusCode)
}

// openCLIStore opens the fixture's store file a second time, as the
// operator's CLI does from another process.
func openCLIStore(t *testing.T, f *fixture) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(f.dir, "grants.db"), StoreOptions{Now: f.clock.Now})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRevoke_FromTheCLIStoreClosesTheSocketAndFailsTheCommandInFlight: a
// revocation written by another store handle closes the device's socket
// (4401) at the server's next grant check and fails its in-flight command
// with a transport error; the token is refused afterwards (REM-5).
func TestRevoke_FromTheCLIStoreClosesTheSocketAndFailsTheCommandInFlight(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("u")
	d := f.dial(token)
	other, _ := f.pair("u")
	keep := f.dial(other)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := f.proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: d.clientID})
		errc <- err
	}()
	d.nextRequest() // in flight, never answered

	cli := openCLIStore(t, f)
	require.NoError(t, cli.Revoke(ctx, deviceID))
	assert.ErrorIs(t, cli.Revoke(ctx, deviceID), ErrNoDevice)

	assert.Equal(t, StatusRevoked, d.closed())
	err := <-errc
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, browserbackend.ClassTransport, be.Class)

	_, resp, err := f.dialRaw("/extension", []string{wire.SubprotocolAuthPrefix + token}, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// The other device is untouched.
	keep.send(map[string]any{"type": wire.SocketResult, "requestId": "nope", "content": "{}"})
	assert.Equal(t, "unknown_request", keep.next().Code)
}

// TestRevokeAll_ClosesEverySocketAndKillsUnusedLinks (REM-5).
func TestRevokeAll_ClosesEverySocketAndKillsUnusedLinks(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	d := f.dial(token)
	_, unused := f.link("u")
	devs, links, err := f.srv.RevokeAll(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, devs)
	assert.Equal(t, 1, links)
	assert.Equal(t, StatusRevoked, d.closed())
	next := NewToken()
	r, _ := f.authorize(unused, "pair", next)
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	list, err := f.srv.Devices(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list)
}

// TestGrantCheck_AFailedReadClosesTheSocket: when the grant store cannot be
// read, open sockets close (fail closed, status 1011) (REM-5).
func TestGrantCheck_AFailedReadClosesTheSocket(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	d := f.dial(token)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(f.dir, "grants.db")+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`ALTER TABLE remote_devices RENAME TO remote_devices_gone`)
	require.NoError(t, err)
	assert.Equal(t, websocket.StatusInternalError, d.closed())
	assert.Contains(t, f.logs.String(), "grant check failed")
}

// TestExpiry_ClosesTheSocket: a grant that expires while its socket is open
// closes it at the next check (REM-5).
func TestExpiry_ClosesTheSocket(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	d := f.dial(token)
	f.clock.Add(DefaultDeviceTTL + time.Second)
	assert.Equal(t, StatusRevoked, d.closed())
}

// TestCapacity_NewDevice503ExistingDeviceReplacesItsOwn (REM-6).
func TestCapacity_NewDevice503ExistingDeviceReplacesItsOwn(t *testing.T) {
	f := newFixture(t, fixtureOpts{limits: Limits{MaxConnections: 1}})
	tokA, devA := f.pair("u")
	tokB, _ := f.pair("u")
	first := f.dial(tokA)

	_, resp, err := f.dialRaw("/extension", []string{wire.SubprotocolAuthPrefix + tokB}, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	second := f.dial(tokA)
	assert.Equal(t, StatusReplaced, first.closed())
	assert.Equal(t, first.clientID, second.clientID)
	assert.Equal(t, []string{devA}, f.srv.Online())
	_, ok := f.hub.Client(second.clientID)
	assert.True(t, ok)
}

// A request that carries a device's credential but fails the upgrade (a
// plain GET, an aborted handshake) leaves the device's open socket as it
// was: still online, still counted against the capacity, still closed by
// Revoke; it used to take the socket's slot and drop it, orphaning the
// socket (out of Online, the capacity, Revoke's reach, and Close waited for
// it).
func TestCapacity_AFailedUpgradeLeavesTheDevicesSocketItsSlot(t *testing.T) {
	f := newFixture(t, fixtureOpts{limits: Limits{MaxConnections: 1}})
	token, devID := f.pair("u")
	d := f.dial(token)

	req, err := http.NewRequest(http.MethodGet, f.http.URL+"/extension", nil)
	require.NoError(t, err)
	req.Header.Set("Sec-WebSocket-Protocol", wire.SubprotocolAuthPrefix+token)
	resp, err := f.http.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusUpgradeRequired, resp.StatusCode, "not a WebSocket handshake")

	assert.Equal(t, []string{devID}, f.srv.Online())
	other, _ := f.pair("u")
	_, resp, err = f.dialRaw("/extension", []string{wire.SubprotocolAuthPrefix + other}, nil)
	require.Error(t, err, "the device still holds the one slot")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NoError(t, f.srv.Revoke(context.Background(), devID))
	assert.Equal(t, StatusRevoked, d.closed())
}

// TestAuthorize_OverItsRate429RetryAfter: the 429's Retry-After is the
// limiter's wait, on the one clock the server takes from its store (REM-6).
func TestAuthorize_OverItsRate429RetryAfter(t *testing.T) {
	f := newFixture(t, fixtureOpts{limits: Limits{AuthorizeRate: 2}})
	for range 2 {
		r, _ := f.authorize(NewToken(), "pair", NewToken())
		assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	}
	r, _ := f.authorize(NewToken(), "pair", NewToken())
	assert.Equal(t, http.StatusTooManyRequests, r.StatusCode)
	assert.Equal(t, "30", r.Header.Get("Retry-After"), "one exchange refills in 60 s / 2")
	f.clock.Add(30 * time.Second)
	r, _ = f.authorize(NewToken(), "pair", NewToken())
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
}

// TestPeerLimiter_1100PeersDoNotEvictTheFirst1024Counters: peers beyond the
// counter bound share the overflow bucket; none of the first 1,024 counters
// is dropped while in use (REM-6).
func TestPeerLimiter_1100PeersDoNotEvictTheFirst1024Counters(t *testing.T) {
	clock := &testClock{t: time.Unix(0, 0)}
	l := newPeerLimiter(60000, DefaultMaxPeerCounters, clock.Now)
	l.global = rate.NewLimiter(rate.Inf, 0) // the global budget is another test's
	peer := func(i int) string { return fmt.Sprintf("10.%d.%d.1:4000", i/256, i%256) }
	// The first peer spends its whole burst.
	for range MaxAuthorizeBurst {
		ok, _ := l.allow(peer(0))
		require.True(t, ok)
	}
	ok, _ := l.allow(peer(0))
	require.False(t, ok)
	overflow := 0
	for i := 1; i < 1100; i++ {
		ok, _ := l.allow(peer(i))
		if i < DefaultMaxPeerCounters {
			require.True(t, ok, "peer %d", i)
		} else if ok {
			overflow++
		}
	}
	assert.Equal(t, MaxAuthorizeBurst, overflow, "the 76 peers beyond the bound share one bucket")
	assert.Equal(t, DefaultMaxPeerCounters, l.counters())
	ok, _ = l.allow(peer(0))
	assert.False(t, ok, "the first peer's counter survived")
	for i := 1; i < DefaultMaxPeerCounters; i++ {
		l.mu.Lock()
		_, kept := l.peers[peerAddr(peer(i))]
		l.mu.Unlock()
		require.True(t, kept, "peer %d", i)
	}
}

// TestPeerLimiter_BurstIsAtMost10: at the default 60 a minute, one peer's
// 11th guess in the same instant is refused, and a guess a second is
// allowed from then on (REM-6).
func TestPeerLimiter_BurstIsAtMost10(t *testing.T) {
	clock := &testClock{t: time.Unix(0, 0)}
	l := newPeerLimiter(DefaultAuthorizeRate, DefaultMaxPeerCounters, clock.Now)
	for i := range MaxAuthorizeBurst {
		ok, _ := l.allow("192.0.2.1:1")
		require.True(t, ok, "guess %d", i)
	}
	ok, wait := l.allow("192.0.2.1:1")
	require.False(t, ok)
	assert.Equal(t, time.Second, wait)
	for range 3 {
		clock.Add(time.Second)
		ok, _ = l.allow("192.0.2.1:1")
		assert.True(t, ok)
		ok, _ = l.allow("192.0.2.1:1")
		assert.False(t, ok)
	}
}

// TestPeerLimiter_RetryAfterIsTheLongerRealWaitInWholeSeconds: a refusal
// waits for both the peer's and the global bucket, rounded up to whole
// seconds (REM-6).
func TestPeerLimiter_RetryAfterIsTheLongerRealWaitInWholeSeconds(t *testing.T) {
	clock := &testClock{t: time.Unix(0, 0)}
	l := newPeerLimiter(1, 2000, clock.Now) // one a minute, globally 16 a minute
	for i := range 16 {
		ok, _ := l.allow(fmt.Sprintf("192.0.2.%d:1", i))
		require.True(t, ok)
	}
	ok, wait := l.allow("192.0.2.100:1") // its own bucket is full, the global one empty
	require.False(t, ok)
	assert.Equal(t, 3750*time.Millisecond, wait)
	assert.Equal(t, "4", retryAfter(wait))
	ok, wait = l.allow("192.0.2.0:1") // both empty: its own refills last
	require.False(t, ok)
	assert.Equal(t, "60", retryAfter(wait))
	assert.Equal(t, "1", retryAfter(time.Millisecond))
}

// TestPeerLimiter_GlobalBudgetIs16TimesThePeerRate (REM-6).
func TestPeerLimiter_GlobalBudgetIs16TimesThePeerRate(t *testing.T) {
	clock := &testClock{t: time.Unix(0, 0)}
	l := newPeerLimiter(10, 2000, clock.Now)
	allowed := 0
	for i := range 1000 {
		if ok, _ := l.allow(fmt.Sprintf("192.0.%d.%d:1", i/250, i%250)); ok {
			allowed++
		}
	}
	assert.Equal(t, 160, allowed)
	// IPv6 peers share a /64; X-Forwarded-For plays no part (RemoteAddr only).
	assert.Equal(t, peerAddr("[2001:db8::1]:1"), peerAddr("[2001:db8::2]:9"))
}

// TestStoreContention_503RetryAfterAndTheGrantStillWorks: a writer holding
// the store's lock (the CLI, say) makes an exchange answer 503 +
// Retry-After after 500 ms instead of failing the grant; the open socket
// stays, and the grant opens sockets and renews afterwards (REM-5).
func TestStoreContention_503RetryAfterAndTheGrantStillWorks(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("u")
	live := f.dial(token)

	db, err := sql.Open("sqlite", "file:"+filepath.Join(f.dir, "grants.db")+"?_txlock=immediate")
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE remote_links SET actor = actor`)
	require.NoError(t, err)

	next := NewToken()
	f.remember(next)
	r, _ := f.authorize(token, "renew", next)
	assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode)
	assert.Equal(t, "1", r.Header.Get("Retry-After"))
	// An unknown credential is refused by a read, without queueing for the lock.
	r, _ = f.authorize(NewToken(), "pair", NewToken())
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	// Reads do not wait for the writer: a socket still opens.
	second := f.dial(token)
	assert.Equal(t, StatusReplaced, live.closed())
	require.NoError(t, tx.Rollback())

	r, out := f.authorize(token, "renew", next)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, deviceID, out.DeviceID)
	assert.Equal(t, []string{deviceID}, f.srv.Online())
	_ = second
}

// TestSocketAuth_RefusedBeforeTheUpgrade: every malformed or foreign
// credential is refused with an HTTP status before any upgrade, and no
// credential reaches the log (REM-4, REM-6).
func TestSocketAuth_RefusedBeforeTheUpgrade(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	_, secret := f.link("u")

	// A server of another endpoint sharing the store issues its own token.
	g := newFixture(t, fixtureOpts{dir: f.dir, endpoint: "wss://other.example.test/extension", peer: f})
	foreign, _ := g.pair("u")

	ext := http.Header{"Origin": {"chrome-extension://abcdefghijklmnopabcdefghijklmnop"}}
	for _, tc := range []struct {
		name   string
		path   string
		protos []string
		hdr    http.Header
		status int
	}{
		{"missing", "/extension", nil, nil, http.StatusUnauthorized},
		{"origin without a credential", "/extension", nil, ext, http.StatusUnauthorized},
		{"web origin", "/extension", []string{wire.SubprotocolAuthPrefix + token}, http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"duplicated", "/extension", []string{wire.SubprotocolAuthPrefix + token, wire.SubprotocolAuthPrefix + token}, nil, http.StatusUnauthorized},
		{"two protocols", "/extension", []string{wire.SubprotocolAuthPrefix + token, "chat"}, nil, http.StatusUnauthorized},
		{"no prefix", "/extension", []string{token}, nil, http.StatusUnauthorized},
		{"wrong token", "/extension", []string{wire.SubprotocolAuthPrefix + NewToken()}, nil, http.StatusUnauthorized},
		{"pairing secret", "/extension", []string{wire.SubprotocolAuthPrefix + secret}, nil, http.StatusUnauthorized},
		{"another endpoint's credential", "/extension", []string{wire.SubprotocolAuthPrefix + foreign}, nil, http.StatusUnauthorized},
		{"credential in the query", "/extension?token=" + token, []string{wire.SubprotocolAuthPrefix + token}, nil, http.StatusBadRequest},
		{"query only", "/extension?access_token=" + token, nil, nil, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, resp, err := f.dialRaw(tc.path, tc.protos, tc.hdr)
			if ws != nil {
				ws.CloseNow()
			}
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Empty(t, f.hub.Roster(), "nothing registered")
		})
	}
	// The secret was not spent by the attempt: it still pairs.
	next := NewToken()
	f.remember(next)
	r, _ := f.authorize(secret, "pair", next)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	// The refusals were logged, without credentials (checked at cleanup).
	assert.Contains(t, f.logs.String(), "remote request refused")
}

// TestLimits_Validate (REM-6).
func TestLimits_Validate(t *testing.T) {
	assert.NoError(t, Limits{}.Validate())
	d := Limits{}.withDefaults()
	assert.Equal(t, Limits{PairingTTL: 5 * time.Minute, DeviceTTL: 90 * 24 * time.Hour, RenewAfter: 30 * 24 * time.Hour,
		MaxConnections: 64, AuthorizeRate: 60, MaxPeerCounters: 1024}, d)
	for _, bad := range []Limits{
		{PairingTTL: 2 * time.Hour},
		{DeviceTTL: 367 * 24 * time.Hour},
		{DeviceTTL: 10 * 24 * time.Hour, RenewAfter: 10 * 24 * time.Hour},
		{MaxConnections: 1001},
		{MaxConnections: -1},
		{AuthorizeRate: 60001},
	} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
}

// TestNew_RefusesPlainWebSocketOffLoopback: ws:// only for a loopback
// endpoint (REM-6).
func TestNew_RefusesPlainWebSocketOffLoopback(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	_, err := New(Options{Store: f.store, Proxy: f.proxy, Hub: f.hub, Endpoint: "ws://browser.example.com/extension"})
	assert.Error(t, err)
	_, err = New(Options{Store: f.store, Proxy: f.proxy, Hub: f.hub, Endpoint: "wss://browser.example.com/extension#x"})
	assert.Error(t, err)
}

// TestStore_HashedAtRestPrivateFile: the store file is mode 0600 and holds
// no token or secret in plain text (REM-5).
func TestStore_HashedAtRestPrivateFile(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	_, secret := f.link("u")
	path := filepath.Join(f.dir, "grants.db")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, "-rw-------", fi.Mode().Perm().String())
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var dump strings.Builder
	for _, q := range []string{`SELECT * FROM remote_devices`, `SELECT * FROM remote_links`} {
		rows, err := db.Query(q)
		require.NoError(t, err)
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			fmt.Fprintln(&dump, vals...)
		}
		rows.Close()
	}
	assert.NotContains(t, dump.String(), token)
	assert.NotContains(t, dump.String(), secret)
	assert.Contains(t, dump.String(), hashSecret(token))
}

// TestCreateLink_AtMost100Unused (REM-1).
func TestCreateLink_AtMost100Unused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for range MaxUnusedLinks {
		f.link("u")
	}
	_, err := f.srv.CreateLink(context.Background(), "u")
	assert.ErrorIs(t, err, ErrTooManyLinks)
	f.clock.Add(DefaultPairingTTL + time.Second) // all expired
	f.link("u")
}

// TestSocket_EventsAndInvalidationsReachTheBackendBoundToTheDevice: CDP
// events and session invalidations sent on the socket are delivered to the
// backend bound to the device's client, as the POST routes deliver them
// (REM-4, PXY-4).
func TestSocket_EventsAndInvalidationsReachTheBackendBoundToTheDevice(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	d := f.dial(token)
	be := f.proxy.NewExtensionBackend(browserbackend.Invocation{ConversationID: "c", ActorPrincipalID: "u", TargetClientID: d.clientID}, hostproxy.BackendOptions{})
	defer be.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		req := d.nextRequest()
		d.answer(req.RequestID, `{}`)
	}()
	_, err := be.Send(ctx, browserbackend.Command{Method: "Page.enable"})
	require.NoError(t, err)
	assert.Equal(t, wire.SocketAccepted, d.next().Type)

	loads, stop := be.Subscribe("Page.loadEventFired")
	defer stop()
	detached, stop2 := be.Subscribe(browserbackend.MethodTargetDetached)
	defer stop2()
	d.send(map[string]any{"type": wire.RemoteEvent, "method": "Page.loadEventFired", "params": map[string]any{"timestamp": 1.5}})
	select {
	case ev := <-loads:
		assert.JSONEq(t, `{"timestamp":1.5}`, string(ev.Params))
	case <-ctx.Done():
		t.Fatal("no event")
	}
	d.send(map[string]any{"type": wire.RemoteSessionInvalidated, "sessionId": "S1", "targetId": "T1", "reason": "tab_closed"})
	select {
	case ev := <-detached:
		assert.Equal(t, "S1", ev.SessionID)
	case <-ctx.Done():
		t.Fatal("no invalidation")
	}
	d.send(map[string]any{"type": wire.RemoteEvent})
	assert.Equal(t, "missing_method", d.next().Code)
	d.send(map[string]any{"type": "bogus"})
	assert.Equal(t, "bad_type", d.next().Code)
}

// TestLink_LogValueRedactsTheSecret: a Link logged by mistake shows its
// expiry, not its URL.
func TestLink_LogValueRedactsTheSecret(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	link, _ := f.link("u")
	f.log.Info("created", "link", link)
	assert.Contains(t, f.logs.String(), `"url":"(redacted)"`)
	// The fixture's cleanup asserts the secret is absent from the log.
}

// TestCleanLabel: labels lose control characters and are cut to 128 bytes
// on a rune boundary.
func TestCleanLabel(t *testing.T) {
	assert.Equal(t, "laptop", cleanLabel(" lap\x00top\n "))
	long := cleanLabel(strings.Repeat("é", 100))
	assert.Len(t, long, 128)
	assert.True(t, utf8.ValidString(long))
}

// TestReconnect_NoCommandIsReplayed: a device that reconnects (replacing
// its socket) while a command is in flight gets that command failed with a
// transport error, and its new socket never receives it (REM-8's server
// side).
func TestReconnect_NoCommandIsReplayed(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("u")
	first := f.dial(token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := f.proxy.Request(ctx, hostproxy.Req{Method: "Input.dispatchMouseEvent", TargetClientID: first.clientID})
		errc <- err
	}()
	first.nextRequest()

	second := f.dial(token)
	assert.Equal(t, StatusReplaced, first.closed())
	var be *browserbackend.Error
	require.ErrorAs(t, <-errc, &be)
	assert.Equal(t, browserbackend.ClassTransport, be.Class)
	assert.True(t, be.Dispatched, "the command may have run: the caller decides, nothing replays it")

	go func() {
		_, _ = f.proxy.Request(ctx, hostproxy.Req{Method: "Page.enable", TargetClientID: second.clientID})
	}()
	got := second.nextRequest()
	assert.Equal(t, "Page.enable", got.CDPMethod, "the first command on the new socket is the new one")
	second.answer(got.RequestID, `{}`)
}

// TestSocket_AFrameOverTheCapFailsItsCommandAsPayloadTooLarge: a client
// that ignores the ready frame's maxBodyBytes and sends a bigger result
// loses its socket (1009), and that command fails at once with
// payload_too_large, the device's other command in flight with a transport
// error; neither waits for its deadline (an hour away).
func TestSocket_AFrameOverTheCapFailsItsCommandAsPayloadTooLarge(t *testing.T) {
	f := newFixture(t, fixtureOpts{maxBody: 4096})
	token, _ := f.pair("u")
	d := f.dial(token)

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := f.proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: d.clientID, Timeout: time.Hour})
			errs <- err
		}()
	}
	big, other := d.nextRequest(), d.nextRequest()
	// The reference extension's member order: requestId before content.
	ctxw, cancelw := context.WithTimeout(ctx, 10*time.Second)
	defer cancelw()
	require.NoError(t, d.ws.Write(ctxw, websocket.MessageText,
		[]byte(`{"type":"result","requestId":"`+big.RequestID+`","content":"`+strings.Repeat("x", 8192)+`","isError":false}`)))
	assert.Equal(t, websocket.StatusMessageTooBig, d.closed())

	got := hostproxytest.CodesByClass(t, errs, 2)
	assert.Equal(t, map[browserbackend.Class]string{
		browserbackend.ClassProtocol:  browserbackend.CodePayloadTooLarge,
		browserbackend.ClassTransport: browserbackend.CodeTransportError,
	}, got, "the cut result fails typed, the other command as its socket's end")
	assert.NotEqual(t, big.RequestID, other.RequestID)
	assert.Contains(t, f.logs.String(), "payload_too_large")
}

// TestRevoke_FromAnotherStoreHandleClosesWithinOneCheckInterval: a
// revocation written by another handle on the store file (the CLI's
// process) ends the device's connection at the first re-check after it,
// DefaultCheckInterval (250 ms) later at most, on the bubble's clock
// (REM-5).
func TestRevoke_FromAnotherStoreHandleClosesWithinOneCheckInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grants.db")
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		quiet := slog.New(slog.DiscardHandler)
		const endpoint = "ws://127.0.0.1:1/extension"
		store, err := OpenStore(path, StoreOptions{})
		require.NoError(t, err)
		defer store.Close()
		hub := eventhub.New(eventhub.WithLogger(quiet))
		defer hub.Close()
		proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: quiet})
		defer proxy.Close()
		srv, err := New(Options{Store: store, Proxy: proxy, Hub: hub, Endpoint: endpoint, Logger: quiet})
		require.NoError(t, err)
		defer srv.Close()

		link, err := store.CreateLink(ctx, endpoint, "u", time.Minute)
		require.NoError(t, err)
		u, _ := url.Parse(link.URL)
		token := NewToken()
		_, err = store.Pair(ctx, endpoint, u.Fragment, token, "laptop", DefaultDeviceTTL, DefaultRenewAfter)
		require.NoError(t, err)
		dev, err := store.Authenticate(ctx, endpoint, token)
		require.NoError(t, err)
		c, _, err := srv.claim(dev) // the connection, as an upgrade holds it
		require.NoError(t, err)
		defer srv.release(c)

		cli, err := OpenStore(path, StoreOptions{})
		require.NoError(t, err)
		defer cli.Close()
		require.NoError(t, cli.Revoke(ctx, dev.DeviceID))
		time.Sleep(DefaultCheckInterval - time.Millisecond)
		synctest.Wait()
		require.False(t, c.ended(), "no re-check yet")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.True(t, c.ended())
		c.mu.Lock()
		defer c.mu.Unlock()
		assert.Equal(t, endRevoked, c.kind)
	})
	assert.Less(t, DefaultCheckInterval+grantReadTimeout, time.Second, "the worst case, a re-check's read failing, stays within a second")
}
