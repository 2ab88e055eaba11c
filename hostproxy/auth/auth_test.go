package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const extOrigin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"

var testKey = bytes.Repeat([]byte("k"), 32)

// clock is an injectable clock for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logSink records log records for audit assertions.
type logSink struct {
	mu   sync.Mutex
	recs []string
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	s.mu.Lock()
	s.recs = append(s.recs, b.String())
	s.mu.Unlock()
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }
func (s *logSink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.recs, "\n")
}

type fixture struct {
	a     *auth.Authority
	clk   *clock
	logs  *logSink
	srv   *httptest.Server
	actor chan string // actor seen by the protected handler
}

func newFixture(t *testing.T, mod func(*auth.Config)) *fixture {
	t.Helper()
	f := &fixture{clk: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, logs: &logSink{}, actor: make(chan string, 16)}
	cfg := auth.Config{Key: testKey, AllowedOrigins: []string{extOrigin}, Now: f.clk.Now, Logger: slog.New(f.logs)}
	if mod != nil {
		mod(&cfg)
	}
	a, err := auth.New(cfg)
	require.NoError(t, err)
	f.a = a
	mux := http.NewServeMux()
	mux.Handle("POST /v1/pair", a.PairHandler())
	mux.Handle("POST /v1/pair/refresh", a.RefreshHandler())
	mux.Handle("GET /v1/events", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, _ := eventhub.ActorFrom(r.Context())
		f.actor <- actor
		w.WriteHeader(http.StatusNoContent)
	})))
	f.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) pair(t *testing.T, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/pair", strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func extHeaders() map[string]string {
	return map[string]string{wire.HeaderInterfaceID: "chrome-extension", "Origin": extOrigin}
}

func errCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return b.Error.Code
}

func tokens(t *testing.T, resp *http.Response) auth.Tokens {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tk auth.Tokens
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tk))
	return tk
}

func (f *fixture) events(t *testing.T, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/events", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestPairExtensionOverLoopbackMintsTokenThatAuthenticatesEvents(t *testing.T) {
	f := newFixture(t, nil)
	tk := tokens(t, f.pair(t, extHeaders(), `{"clientId":"c1"}`))
	assert.Equal(t, auth.DefaultActor, tk.ActorPrincipalID)
	assert.Equal(t, f.clk.Now().Add(24*time.Hour), tk.ExpiresAt.UTC())
	assert.Empty(t, tk.RefreshToken, "no deviceId, no refresh token")

	c, err := f.a.Verify(tk.Token, auth.ScopeActorClient)
	require.NoError(t, err)
	assert.Equal(t, "c1", c.ClientID)
	assert.Equal(t, "chrome-extension", c.InterfaceID)

	resp := f.events(t, tk.Token)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, auth.DefaultActor, <-f.actor)
}

func TestPairFromNonLoopbackPeerIsForbidden(t *testing.T) {
	f := newFixture(t, nil)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/pair", strings.NewReader("{}"))
	req.RemoteAddr = "192.0.2.7:5555"
	for k, v := range extHeaders() {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.a.PairHandler().ServeHTTP(rec, req)
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), "endpoint is local-only")
	assert.Contains(t, f.logs.all(), "non-loopback peer")
}

func TestPairWithAnyForwardingHeaderIsForbidden(t *testing.T) {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-IP", "Via", "X-Forwarded-Anything"} {
		t.Run(h, func(t *testing.T) {
			f := newFixture(t, nil)
			hdr := extHeaders()
			hdr[h] = "127.0.0.1"
			resp := f.pair(t, hdr, "{}")
			assert.Equal(t, http.StatusForbidden, resp.StatusCode)
			assert.Equal(t, "local_only", errCode(t, resp))
		})
	}
}

func TestPairWithForeignHostHeaderIsForbidden(t *testing.T) {
	f := newFixture(t, nil)
	hdr := extHeaders()
	hdr["Host"] = "evil.example:7821"
	resp := f.pair(t, hdr, "{}")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "local_only", errCode(t, resp))

	for _, ok := range []string{"localhost:7821", "127.0.0.1", "[::1]:80"} {
		hdr["Host"] = ok
		assert.Equal(t, http.StatusOK, f.pair(t, hdr, "{}").StatusCode, ok)
	}
}

func TestPairWithUnknownOriginIsForbidden(t *testing.T) {
	f := newFixture(t, nil)
	for _, origin := range []string{"chrome-extension://zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "http://127.0.0.1:8080", ""} {
		hdr := extHeaders()
		hdr["Origin"] = origin
		resp := f.pair(t, hdr, "{}")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, origin)
		assert.Equal(t, "origin_not_allowed", errCode(t, resp))
	}
	// A desktop client sends no Origin and may pair; a web page (with an
	// Origin) may not, whatever interface it claims.
	assert.Equal(t, http.StatusOK, f.pair(t, map[string]string{wire.HeaderInterfaceID: "macos"}, "").StatusCode)
	resp := f.pair(t, map[string]string{wire.HeaderInterfaceID: "macos", "Origin": "https://evil.example"}, "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, f.logs.all(), "origin_not_allowed")
}

func TestPairEleventhRequestWithinAMinuteIsRateLimited(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 10 {
		assert.Equal(t, http.StatusOK, f.pair(t, extHeaders(), "{}").StatusCode, "request %d", i+1)
	}
	resp := f.pair(t, extHeaders(), "{}")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "60", resp.Header.Get("Retry-After"))
	assert.Equal(t, "10", resp.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	assert.NotEmpty(t, resp.Header.Get("X-RateLimit-Reset"))
	assert.Equal(t, "rate_limited", errCode(t, resp))
	assert.Contains(t, f.logs.all(), "rate_limited")
}

func TestPairWithoutInterfaceHeaderIsBadRequest(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.pair(t, map[string]string{"Origin": extOrigin}, "{}")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "interface_required", errCode(t, resp))
}

func TestPairRejectsMalformedAndOversizedBodies(t *testing.T) {
	f := newFixture(t, nil)
	resp0 := f.pair(t, map[string]string{wire.HeaderInterfaceID: "mac os!"}, "{}")
	assert.Equal(t, http.StatusBadRequest, resp0.StatusCode)
	assert.Equal(t, "bad_interface", errCode(t, resp0))
	assert.Equal(t, http.StatusBadRequest, f.pair(t, extHeaders(), `{"clientId":"a\u0001b"}`).StatusCode)
	resp := f.pair(t, extHeaders(), "{not json")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp = f.pair(t, extHeaders(), `{"clientId":"`+strings.Repeat("x", 8<<10)+`"}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/pair", nil)
	// The mux only routes POST; the handler itself refuses other methods.
	rec := httptest.NewRecorder()
	req.RemoteAddr = "127.0.0.1:1"
	f.a.PairHandler().ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func TestEventsWithBadSignatureIsUnauthorized(t *testing.T) {
	f := newFixture(t, nil)
	other, err := auth.New(auth.Config{Key: bytes.Repeat([]byte("x"), 32), Now: f.clk.Now})
	require.NoError(t, err)
	forged, err := other.Mint(auth.Grant{InterfaceID: "chrome-extension"})
	require.NoError(t, err)

	resp := f.events(t, forged.Token)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "invalid_token", errCode(t, resp))
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")

	good, err := f.a.Mint(auth.Grant{})
	require.NoError(t, err)
	parts := strings.Split(good.Token, ".")
	parts[2] = strings.Repeat("A", len(parts[2]))
	assert.Equal(t, http.StatusUnauthorized, f.events(t, strings.Join(parts, ".")).StatusCode)
	assert.Equal(t, http.StatusUnauthorized, f.events(t, "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, f.events(t, "not-a-jwt").StatusCode)

	logs := f.logs.all()
	assert.Contains(t, logs, "auth: request denied")
	assert.NotContains(t, logs, forged.Token, "tokens are never logged")
	assert.NotContains(t, logs, parts[1])
}

func TestEventsWithExpiredTokenIsUnauthorized(t *testing.T) {
	f := newFixture(t, nil)
	tk, err := f.a.Mint(auth.Grant{InterfaceID: "chrome-extension"})
	require.NoError(t, err)
	f.clk.Advance(24*time.Hour - time.Second)
	assert.Equal(t, http.StatusNoContent, f.events(t, tk.Token).StatusCode)
	<-f.actor
	f.clk.Advance(2 * time.Second)
	resp := f.events(t, tk.Token)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "token_expired", errCode(t, resp))
}

func TestEventsRefusesTokenFromOtherIssuerOrAudience(t *testing.T) {
	f := newFixture(t, nil)
	for _, mod := range []func(*auth.Config){
		func(c *auth.Config) { c.Issuer = "someone-else" },
		func(c *auth.Config) { c.Audience = "another-service" },
	} {
		cfg := auth.Config{Key: testKey, Now: f.clk.Now}
		mod(&cfg)
		other, err := auth.New(cfg)
		require.NoError(t, err)
		tk, err := other.Mint(auth.Grant{})
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, f.events(t, tk.Token).StatusCode)
	}
}

func TestEventsRefusesRefreshTokenAsAccessToken(t *testing.T) {
	f := newFixture(t, nil)
	tk, err := f.a.Mint(auth.Grant{DeviceID: "dev1"})
	require.NoError(t, err)
	resp := f.events(t, tk.RefreshToken)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "wrong_token_kind", errCode(t, resp))
}

func TestMiddlewareRefusesTokenBoundToAnotherClientOrInterface(t *testing.T) {
	f := newFixture(t, nil)
	tk, err := f.a.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	do := func(hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tk.Token)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := f.srv.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do(map[string]string{wire.HeaderClientID: "c2"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "client_mismatch", errCode(t, resp))
	resp = do(map[string]string{wire.HeaderClientID: "c1", wire.HeaderInterfaceID: "macos"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "interface_mismatch", errCode(t, resp))
	assert.Equal(t, http.StatusNoContent, do(map[string]string{wire.HeaderClientID: "c1", wire.HeaderInterfaceID: "chrome-extension"}).StatusCode)
	<-f.actor
}

func (f *fixture) refresh(t *testing.T, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/pair/refresh", bytes.NewReader(b))
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestRefreshTokenIsDeviceBoundAndSingleUse(t *testing.T) {
	f := newFixture(t, nil)
	first := tokens(t, f.pair(t, extHeaders(), `{"clientId":"c1","deviceId":"dev1"}`))
	require.NotEmpty(t, first.RefreshToken)

	resp := f.refresh(t, auth.RefreshRequest{RefreshToken: first.RefreshToken, DeviceID: "dev2"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "device_mismatch", errCode(t, resp))

	f.clk.Advance(time.Hour)
	second := tokens(t, f.refresh(t, auth.RefreshRequest{RefreshToken: first.RefreshToken, DeviceID: "dev1"}))
	assert.NotEqual(t, first.Token, second.Token)
	assert.NotEmpty(t, second.RefreshToken)
	assert.Equal(t, f.clk.Now().Add(24*time.Hour), second.ExpiresAt.UTC())
	c, err := f.a.Verify(second.Token, auth.ScopeActorClient)
	require.NoError(t, err)
	assert.Equal(t, "c1", c.ClientID, "refresh keeps the client binding")

	resp = f.refresh(t, auth.RefreshRequest{RefreshToken: first.RefreshToken, DeviceID: "dev1"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "refresh_reused", errCode(t, resp))

	resp = f.refresh(t, auth.RefreshRequest{RefreshToken: second.Token, DeviceID: "dev1"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "an access token is not a refresh token")

	f.clk.Advance(31 * 24 * time.Hour)
	resp = f.refresh(t, auth.RefreshRequest{RefreshToken: second.RefreshToken, DeviceID: "dev1"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "token_expired", errCode(t, resp))
	assert.NotContains(t, f.logs.all(), second.RefreshToken)
}

func TestNewRejectsShortKeyAndNonExtensionOrigins(t *testing.T) {
	_, err := auth.New(auth.Config{Key: []byte("short")})
	assert.ErrorContains(t, err, "auth: signing key must be at least 32 bytes")
	_, err = auth.New(auth.Config{Key: testKey, AllowedOrigins: []string{"https://example.com"}})
	assert.ErrorContains(t, err, "not a chrome-extension://<id> origin")
}

func TestLoadOrCreateKeyPersistsWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "signing.key")
	k1, err := auth.LoadOrCreateKey(path)
	require.NoError(t, err)
	assert.Len(t, k1, auth.KeySize)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	k2, err := auth.LoadOrCreateKey(path)
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "the key survives a restart")

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = auth.LoadOrCreateKey(path)
	assert.ErrorContains(t, err, "chmod 600")
	assert.NotContains(t, err.Error(), string(k1))

	short := filepath.Join(t.TempDir(), "short.key")
	require.NoError(t, os.WriteFile(short, []byte("abc"), 0o600))
	_, err = auth.LoadOrCreateKey(short)
	assert.ErrorContains(t, err, "at least 32")
}
