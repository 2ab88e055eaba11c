package hostproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/internal/logtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newTestProxy(h eventhub.Hub) *Proxy {
	return New(Options{Hub: h, Logger: quietLogger()})
}

func TestChoose_PrefersExtensionOverBridge(t *testing.T) {
	h := newFakeHub()
	h.add("mac", wire.InterfaceMacOS, "alice", t0.Add(time.Hour)) // more recent
	h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	c, err := p.choose(Req{Method: "Runtime.evaluate"})
	require.NoError(t, err)
	assert.Equal(t, "ext", c.ClientID)
}

func TestChoose_MostRecentlyActiveFirstWithinGroup(t *testing.T) {
	h := newFakeHub()
	h.add("ext-old", wire.InterfaceChromeExtension, "alice", t0)
	h.add("ext-new", wire.InterfaceChromeExtension, "alice", t0.Add(time.Minute))
	h.add("mac-old", wire.InterfaceMacOS, "bob", t0)
	h.add("mac-new", wire.InterfaceMacOS, "bob", t0.Add(time.Minute))
	h.add("web", wire.InterfaceWeb, "bob", t0.Add(time.Hour)) // no host_browser
	p := newTestProxy(h)

	c, err := p.choose(Req{Method: "Page.navigate"})
	require.NoError(t, err)
	assert.Equal(t, "ext-new", c.ClientID)

	c, err = p.choose(Req{Method: "Page.navigate", SourceActor: "bob"})
	require.NoError(t, err)
	assert.Equal(t, "mac-new", c.ClientID, "bridges ordered by recency; the web client is not eligible")
}

func TestChoose_TargetClientPins(t *testing.T) {
	h := newFakeHub()
	h.add("ext-a", wire.InterfaceChromeExtension, "alice", t0.Add(time.Minute))
	h.add("ext-b", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)

	c, err := p.choose(Req{Method: "Page.navigate", TargetClientID: "ext-b"})
	require.NoError(t, err)
	assert.Equal(t, "ext-b", c.ClientID)

	_, err = p.choose(Req{Method: "Page.navigate", TargetClientID: "ext-gone"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeNoClient})

	_, err = p.choose(Req{Method: "Page.navigate", TargetClientID: "ext-b", SourceActor: "bob"})
	assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeNoClient}, "another actor's client cannot be pinned")
}

func TestChoose_SourceActorRestricts(t *testing.T) {
	h := newFakeHub()
	h.add("ext-alice", wire.InterfaceChromeExtension, "alice", t0.Add(time.Hour))
	h.add("mac-bob", wire.InterfaceMacOS, "bob", t0)
	p := newTestProxy(h)

	c, err := p.choose(Req{Method: "Page.navigate", SourceActor: "bob"})
	require.NoError(t, err)
	assert.Equal(t, "mac-bob", c.ClientID, "alice's extension is preferred in general but not eligible for bob")

	_, err = p.choose(Req{Method: "Page.navigate", SourceActor: "carol"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeNoClient})
}

func TestChoose_VellumMethodsOnlyToExtensions(t *testing.T) {
	h := newFakeHub()
	h.add("mac", wire.InterfaceMacOS, "alice", t0.Add(time.Hour))
	h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)

	c, err := p.choose(Req{Method: wire.MethodListTabs})
	require.NoError(t, err)
	assert.Equal(t, "ext", c.ClientID)

	// Only a desktop bridge: extension_required, protocol class, no failover.
	h.remove("ext")
	_, err = p.choose(Req{Method: wire.MethodListTabs})
	require.Error(t, err)
	assert.ErrorIs(t, err, browserbackend.ErrExtensionRequired)
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.NotErrorIs(t, err, browserbackend.ErrTransport, "extension_required must not fail over")
	assert.False(t, browserbackend.DefaultFailover(browserbackend.Classify(err, false), browserbackend.StageSend))

	// Pinning the bridge does not help either.
	_, err = p.choose(Req{Method: wire.MethodSelectTab, TargetClientID: "mac"})
	assert.ErrorIs(t, err, browserbackend.ErrExtensionRequired)

	// Through Request: nothing is published.
	_, err = p.Request(context.Background(), Req{Method: wire.MethodListTabs})
	assert.ErrorIs(t, err, browserbackend.ErrExtensionRequired)
	h.clients["mac"].empty(t)
}

func TestRequest_NoEligibleClientIsTransportNoClient(t *testing.T) {
	p := newTestProxy(newFakeHub())
	_, err := p.Request(context.Background(), Req{Method: "Page.navigate"})
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassTransport, e.Class)
	assert.Equal(t, browserbackend.CodeNoClient, e.Code)
	assert.False(t, e.Dispatched)
}

// startRequest runs Request in a goroutine and returns the request message
// the target client received and a channel with the outcome.
type outcome struct {
	res json.RawMessage
	err error
}

func startRequest(t *testing.T, ctx context.Context, p *Proxy, req Req, target *fakeClient) (map[string]any, <-chan outcome) {
	t.Helper()
	done := make(chan outcome, 1)
	go func() {
		res, err := p.Request(ctx, req)
		done <- outcome{res, err}
	}()
	return target.next(t), done
}

func TestRequest_PublishesWireMessageAndReturnsResult(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	msg, done := startRequest(t, context.Background(), p, Req{
		ConversationID: "conv-1", Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1"}`),
		SessionID: "S1", Timeout: 7 * time.Second, SourceActor: "alice",
	}, ext)
	assert.Equal(t, wire.TypeHostBrowserRequest, msg["type"])
	assert.Equal(t, "conv-1", msg["conversationId"])
	assert.Equal(t, "Runtime.evaluate", msg["cdpMethod"])
	assert.Equal(t, map[string]any{"expression": "1+1"}, msg["cdpParams"])
	assert.Equal(t, "S1", msg["cdpSessionId"])
	assert.Equal(t, 7.0, msg["timeout_seconds"])
	id := msg["requestId"].(string)

	in, ok := p.Interactions().Lookup(id)
	require.True(t, ok)
	assert.Equal(t, Interaction{RequestID: id, Kind: KindHostBrowser, ConversationID: "conv-1",
		TargetClientID: "ext", TargetActor: "alice", Registered: in.Registered}, in)

	rec := postResult(p, "ext", "alice", ResultBody{RequestID: id, Content: `{"result":{"type":"number","value":2}}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"accepted":true}`, rec.Body.String())
	out := <-done
	require.NoError(t, out.err)
	assert.JSONEq(t, `{"result":{"type":"number","value":2}}`, string(out.res))
	assert.Empty(t, p.Interactions().List(nil))
	assert.Contains(t, h.touched, "ext", "a result post counts as client activity")
}

func postResult(p *Proxy, clientID, actor string, body any) *httptest.ResponseRecorder {
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	default:
		raw, _ = json.Marshal(b)
	}
	return post(p.resultHandler(), clientID, actor, raw)
}

func post(h http.Handler, clientID, actor string, raw []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(raw))
	if clientID != "" {
		r.Header.Set(wire.HeaderClientID, clientID)
	}
	if actor != "" {
		r = r.WithContext(eventhub.WithActor(r.Context(), actor))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestResultRoute_RejectionsLeaveRequestPending(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	h.add("ext-2", wire.InterfaceChromeExtension, "alice", t0)
	p := New(Options{Hub: h, Logger: quietLogger(), MaxBodyBytes: 1024})
	require.NoError(t, p.Interactions().Register(Interaction{RequestID: "bash-1", Kind: "host_bash", ConversationID: "c"}))

	msg, done := startRequest(t, context.Background(), p, Req{Method: "Page.navigate", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)
	ok := ResultBody{RequestID: id, Content: `{"frameId":"F"}`}

	cases := []struct {
		name, client, actor string
		body                any
		status              int
		code                string
	}{
		{"malformed JSON", "ext", "alice", []byte(`{"requestId":`), 400, "malformed_body"},
		{"no request id", "ext", "alice", ResultBody{Content: "{}"}, 400, "missing_request_id"},
		{"unknown request", "ext", "alice", ResultBody{RequestID: "nope", Content: "{}"}, 404, "unknown_request"},
		{"wrong kind", "ext", "alice", ResultBody{RequestID: "bash-1", Content: "{}"}, 409, "wrong_kind"},
		{"missing client header", "", "alice", ok, 400, "missing_client_id"},
		{"another client", "ext-2", "alice", ok, 403, "client_mismatch"},
		{"another actor", "ext", "mallory", ok, 403, "wrong_actor"},
		{"no actor", "ext", "", ok, 403, "wrong_actor"},
		// An oversized result of another actor's client names the request
		// but must not end it (WIRE-5 fails only the target's own).
		{"oversized body of another actor", "ext", "mallory", []byte(`{"requestId":"` + id + `","content":"` + strings.Repeat("x", 2048) + `"}`), 413, "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := postResult(p, tc.client, tc.actor, tc.body)
			assert.Equal(t, tc.status, rec.Code, rec.Body.String())
			var e routeError
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			assert.Equal(t, tc.code, e.Error.Code)
			_, pending := p.Interactions().Lookup(id)
			assert.True(t, pending, "a rejected post must not consume the request")
		})
	}
	select {
	case o := <-done:
		t.Fatalf("request completed by a rejected post: %v %v", o.res, o.err)
	default:
	}

	rec := postResult(p, "ext", "alice", ok)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	out := <-done
	require.NoError(t, out.err)
	assert.JSONEq(t, `{"frameId":"F"}`, string(out.res))

	rec = postResult(p, "ext", "alice", ok)
	assert.Equal(t, http.StatusNotFound, rec.Code, "an answered request is gone")
	_, bashPending := p.Interactions().Lookup("bash-1")
	assert.True(t, bashPending)
}

func TestResultRoute_WrongMethodIs405(t *testing.T) {
	p := newTestProxy(newFakeHub())
	rec := httptest.NewRecorder()
	p.resultHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func TestRequest_TimeoutSendsCancelToTargetOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0.Add(time.Minute))
		other := h.add("ext-other", wire.InterfaceChromeExtension, "alice", t0)
		bob := h.add("mac-bob", wire.InterfaceMacOS, "bob", t0)
		p := newTestProxy(h)

		start := time.Now()
		msg, done := startRequest(t, context.Background(), p, Req{Method: "Page.navigate", SourceActor: "alice"}, ext)
		out := <-done
		assert.Equal(t, DefaultTimeout, time.Since(start), "the default timeout is 30 s")
		var e *browserbackend.Error
		require.ErrorAs(t, out.err, &e)
		assert.Equal(t, browserbackend.ClassTimeout, e.Class)
		assert.Equal(t, browserbackend.CodeTimeout, e.Code)
		assert.True(t, e.Dispatched)

		cancel := ext.next(t)
		assert.Equal(t, map[string]any{"type": wire.TypeHostBrowserCancel, "requestId": msg["requestId"]}, cancel)
		other.empty(t)
		bob.empty(t)
		assert.Empty(t, p.Interactions().List(nil), "the pending entry is resolved")

		// A late result is refused: the request no longer exists.
		rec := postResult(p, "ext", "alice", ResultBody{RequestID: msg["requestId"].(string), Content: "{}"})
		assert.Equal(t, http.StatusNotFound, rec.Code)
	})
}

func TestRequest_PerRequestTimeoutOverridesDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		ext := h.add("ext", wire.InterfaceChromeExtension, "", t0)
		p := New(Options{Hub: h, Logger: quietLogger(), DefaultTimeout: time.Minute})
		start := time.Now()
		_, done := startRequest(t, context.Background(), p, Req{Method: "X.y", Timeout: 2 * time.Second}, ext)
		out := <-done
		assert.ErrorIs(t, out.err, browserbackend.ErrTimeout)
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestRequest_CallerCancellationSendsCancelToTargetOnly(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0.Add(time.Minute))
	other := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	ctx, cancel := context.WithCancel(context.Background())
	msg, done := startRequest(t, ctx, p, Req{Method: "Page.navigate"}, ext)
	cancel()
	out := <-done
	var e *browserbackend.Error
	require.ErrorAs(t, out.err, &e)
	assert.Equal(t, browserbackend.ClassAborted, e.Class)
	assert.Equal(t, browserbackend.CodeCancelled, e.Code)
	assert.Equal(t, map[string]any{"type": wire.TypeHostBrowserCancel, "requestId": msg["requestId"]}, ext.next(t))
	other.empty(t)
	assert.Empty(t, p.Interactions().List(nil))
}

func TestProxyClose_CancelsEverythingInFlight(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0.Add(time.Minute))
	mac := h.add("mac", wire.InterfaceMacOS, "bob", t0)
	p := newTestProxy(h)
	m1, d1 := startRequest(t, context.Background(), p, Req{Method: "A.a", SourceActor: "alice"}, ext)
	m2, d2 := startRequest(t, context.Background(), p, Req{Method: "B.b", SourceActor: "bob"}, mac)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "idempotent")
	for _, d := range []<-chan outcome{d1, d2} {
		out := <-d
		assert.ErrorIs(t, out.err, browserbackend.ErrClosed)
	}
	assert.Equal(t, m1["requestId"], ext.next(t)["requestId"])
	assert.Equal(t, m2["requestId"], mac.next(t)["requestId"])
	assert.Empty(t, p.Interactions().List(nil))
	_, err := p.Request(context.Background(), Req{Method: "A.a"})
	assert.ErrorIs(t, err, browserbackend.ErrClosed)
}

func TestRequest_TargetClientGoneFailsAtOnceWithTransportError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
		p := newTestProxy(h)
		start := time.Now()
		_, done := startRequest(t, context.Background(), p, Req{Method: "Page.navigate"}, mac)
		h.remove("mac")
		out := <-done
		assert.Zero(t, time.Since(start), "fails on the disconnect, not on the 30 s timeout")
		var e *browserbackend.Error
		require.ErrorAs(t, out.err, &e)
		assert.Equal(t, browserbackend.ClassTransport, e.Class)
		assert.True(t, browserbackend.DefaultFailover(e, browserbackend.StageSend), "failover-eligible")
		assert.Empty(t, p.Interactions().List(nil))
	})
}

func TestRequest_PublishErrorIsTransportErrorAndLogged(t *testing.T) {
	h := newFakeHub()
	h.add("mac", wire.InterfaceMacOS, "alice", t0)
	h.publishErr = errors.New("broker down")
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := New(Options{Hub: h, Logger: logger})
	_, err := p.Request(context.Background(), Req{Method: "Page.navigate"})
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassTransport, e.Class)
	assert.False(t, e.Dispatched)
	assert.ErrorContains(t, err, "broker down")
	recs := buf.find(t, "host_browser_request publish failed")
	require.Len(t, recs, 1)
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.Equal(t, "mac", recs[0]["clientId"])
	assert.Equal(t, "hostproxy", recs[0]["module"])
	assert.Empty(t, p.Interactions().List(nil))
}

func TestClassifyResult_FollowsWireContract(t *testing.T) {
	cases := []struct {
		name    string
		content string
		isError bool
		class   browserbackend.Class
		code    string
		cdpCode int
	}{
		{"success", `{"a":1}`, false, "", "", 0},
		{"empty success", ``, false, "", "", 0},
		{"success not JSON", `<html>`, false, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, 0},
		{"transport code", `{"code":"unreachable","message":"no chrome"}`, true, browserbackend.ClassTransport, "unreachable", 0},
		{"cancelled code", `{"code":"cancelled","message":"x"}`, true, browserbackend.ClassTransport, "cancelled", 0},
		{"session code", `{"code":"cdp_session_not_found","message":"x"}`, true, browserbackend.ClassTransport, "cdp_session_not_found", 0},
		{"client's own timeout", `{"code":"timeout","message":"x"}`, true, browserbackend.ClassTransport, browserbackend.CodeTimeout, 0},
		{"CDP code", `{"code":-32601,"message":"'Foo.bar' wasn't found"}`, true, browserbackend.ClassProtocol, browserbackend.CodeCDPError, -32601},
		{"other string code", `{"code":"extension_required","message":"x"}`, true, browserbackend.ClassProtocol, "extension_required", 0},
		{"error in plain text", `boom`, true, browserbackend.ClassProtocol, browserbackend.CodeClientError, 0},
		{"error without code", `{"message":"x"}`, true, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, 0},
		{"fractional code", `{"code":1.5}`, true, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ClassifyResult("M.m", browserbackend.KindHostBridge, tc.content, tc.isError)
			if tc.class == "" {
				require.NoError(t, err)
				assert.True(t, json.Valid(res))
				return
			}
			var e *browserbackend.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.class, e.Class)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, tc.cdpCode, e.CDPCode)
			assert.Equal(t, "M.m", e.Method)
			assert.Equal(t, browserbackend.KindHostBridge, e.Backend)
		})
	}
	_, err := ClassifyResult("M.m", "", `{"code":-32601,"message":"x"}`, true)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)
}

func TestPending_RegisterResolveLookups(t *testing.T) {
	p := New(Options{Hub: newFakeHub(), Logger: quietLogger()})
	require.NoError(t, p.Interactions().Register(Interaction{RequestID: "1", Kind: KindHostBrowser, ConversationID: "a", Registered: t0}))
	require.NoError(t, p.Interactions().Register(Interaction{RequestID: "2", Kind: "host_bash", ConversationID: "a", Registered: t0.Add(time.Second)}))
	require.NoError(t, p.Interactions().Register(Interaction{RequestID: "3", Kind: KindHostBrowser, ConversationID: "b", Registered: t0.Add(2 * time.Second)}))
	assert.ErrorIs(t, p.Interactions().Register(Interaction{RequestID: "1", Kind: "host_cu"}), ErrDuplicateRequest)
	assert.Error(t, p.Interactions().Register(Interaction{}))

	ids := func(ins []Interaction) (out []string) {
		for _, in := range ins {
			out = append(out, in.RequestID)
		}
		return out
	}
	byConversation := func(c string) func(Interaction) bool {
		return func(in Interaction) bool { return in.ConversationID == c }
	}
	assert.Equal(t, []string{"1", "2"}, ids(p.Interactions().List(byConversation("a"))))
	assert.Equal(t, []string{"1", "3"}, ids(p.Interactions().List(func(in Interaction) bool { return in.Kind == KindHostBrowser })))

	in, ok := p.Interactions().Resolve("1")
	assert.True(t, ok)
	assert.Equal(t, KindHostBrowser, in.Kind)
	_, ok = p.Interactions().Resolve("1")
	assert.False(t, ok, "resolve is idempotent")
	assert.Equal(t, []string{"2"}, ids(p.Interactions().List(byConversation("a"))))
	assert.Len(t, p.Interactions().List(nil), 2)
}

func TestRequest_TimeoutSecondsTellsTheClientTheEarlierDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		ext := h.add("ext", wire.InterfaceChromeExtension, "", t0)
		p := newTestProxy(h)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		msg, done := startRequest(t, ctx, p, Req{Method: "X.y"}, ext)
		assert.Equal(t, 5.0, msg["timeout_seconds"], "the caller's 5 s deadline, not the 30 s default")
		out := <-done
		assert.ErrorIs(t, out.err, browserbackend.ErrTimeout)
	})
}

// syncBuffer collects JSON log lines; the package's internal tests cannot use
// hostproxytest (that kit imports this package).
type syncBuffer struct{ logtest.Buffer }

// find returns the records whose msg is msg.
func (b *syncBuffer) find(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec))
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// TestResultRoute_OversizedResultFailsItsRequestAtOnce: the target client's
// result above MaxBodyBytes is answered 413 and its caller fails with
// payload_too_large (protocol, dispatched), not a timeout (WIRE-5).
func TestResultRoute_OversizedResultFailsItsRequestAtOnce(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := New(Options{Hub: h, Logger: quietLogger(), MaxBodyBytes: 1024})
	msg, done := startRequest(t, context.Background(), p, Req{Method: "Page.captureScreenshot", TargetClientID: "ext",
		Timeout: time.Hour}, ext)
	id := msg["requestId"].(string)
	rec := postResult(p, "ext", "alice", []byte(`{"requestId":"`+id+`","content":"`+strings.Repeat("x", 4096)+`"}`))
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	out := <-done
	assert.ErrorIs(t, out.err, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodePayloadTooLarge})
	assert.NotErrorIs(t, out.err, browserbackend.ErrTransport)
	assert.Equal(t, "", requestIDPrefix([]byte(`{"content":"`+strings.Repeat("x", 64))), "requestId after the cut is not found")
	assert.Equal(t, "r1", requestIDPrefix([]byte(`{"isError":false,"requestId":"r1","content":"xx`)))
}

// FailOversizeFrame fails only a result's request, of the socket's own
// client, named before the cut.
func TestFailOversizeFrame_OnlyAResultOfTheClientNamedBeforeTheCut(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := New(Options{Hub: h, Logger: quietLogger(), MaxBodyBytes: 1024})
	msg, done := startRequest(t, context.Background(), p, Req{Method: "Runtime.evaluate", TargetClientID: "ext",
		Timeout: time.Hour}, ext)
	id := msg["requestId"].(string)
	assert.Equal(t, "", p.ClientFrames().FailOversize("ext", "alice", TransportWebSocket,
		[]byte(`{"type":"host_browser_event","requestId":"`+id+`","params":{"x":"`)), "an event frame fails nothing")
	assert.Equal(t, "", p.ClientFrames().FailOversize("ext", "alice", TransportWebSocket,
		[]byte(`{"type":"result","content":"`+strings.Repeat("x", 64))), "no requestId before the cut")
	assert.Equal(t, "", p.ClientFrames().FailOversize("other", "alice", TransportWebSocket,
		[]byte(`{"type":"result","requestId":"`+id+`","content":"xx`)), "another client's frame")
	assert.Equal(t, id, p.ClientFrames().FailOversize("ext", "alice", TransportWebSocket,
		[]byte(`{"type":"result","requestId":"`+id+`","content":"xx`)))
	out := <-done
	assert.ErrorIs(t, out.err, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodePayloadTooLarge})
	assert.Equal(t, int64(1024), p.ClientFrames().MaxBodyBytes())
}

// A request that times out carries the client's diagnostics (issue 10), on
// synctest's clock: the requests in flight to that client (the timed-out
// one included), the oldest one's age, the time since its last result and
// its connection's age.
func TestRequest_TimeoutCarriesClientDiagnostics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		ext := h.add("ext", wire.InterfaceChromeExtension, "", time.Now())
		p := New(Options{Hub: h, Logger: quietLogger(), DefaultTimeout: time.Hour})
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		_, hung := startRequest(t, ctx, p, Req{Method: "Hung.one"}, ext)
		msg, answered := startRequest(t, context.Background(), p, Req{Method: "Quick.one"}, ext)
		rec := postResult(p, "ext", "", ResultBody{RequestID: msg["requestId"].(string), Content: "{}"})
		require.Equal(t, http.StatusOK, rec.Code)
		require.NoError(t, (<-answered).err)

		_, done := startRequest(t, context.Background(), p, Req{Method: "Slow.one", Timeout: 3 * time.Second}, ext)
		out := <-done
		var e *browserbackend.Error
		require.ErrorAs(t, out.err, &e)
		assert.Equal(t, browserbackend.ClassTimeout, e.Class)
		require.NotNil(t, e.Diagnostics)
		assert.Equal(t, browserbackend.Diagnostics{InFlight: 2, OldestInFlight: 3 * time.Second, SinceLastAnswer: 3 * time.Second,
			Uptime: 3 * time.Second}, *e.Diagnostics)
		assert.Contains(t, out.err.Error(), "2 in flight, oldest 3s, last answer 3s ago, up 3s")

		cancel()
		assert.ErrorIs(t, (<-hung).err, browserbackend.ErrAborted)
	})
}

// A request whose deadline has already passed is not published: its
// timeout says the command was never sent and carries the diagnostics of
// the client it would have gone to (synctest clock).
func TestRequest_TimeoutBeforeSendIsNotPublishedAndCarriesDiagnostics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		ext := h.add("ext", wire.InterfaceChromeExtension, "", time.Now())
		p := New(Options{Hub: h, Logger: quietLogger()})
		defer p.Close()
		time.Sleep(5 * time.Second) // the fake clock: the client has been connected 5 s
		ctx, cancel := context.WithDeadline(context.Background(), time.Now())
		defer cancel()
		_, err := p.Request(ctx, Req{Method: "Input.dispatchKeyEvent", Backend: browserbackend.KindExtension})
		var e *browserbackend.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, browserbackend.ClassTimeout, e.Class)
		assert.False(t, e.Dispatched)
		require.NotNil(t, e.Diagnostics)
		assert.Equal(t, browserbackend.Diagnostics{SinceLastAnswer: 5 * time.Second, Uptime: 5 * time.Second}, *e.Diagnostics)
		assert.Equal(t, "browserbackend: extension Input.dispatchKeyEvent timeout: deadline passed before the command was sent (0 in flight, last answer 5s ago, up 5s): context deadline exceeded", err.Error())
		assert.Empty(t, ext.msgs, "nothing published")
	})
}
