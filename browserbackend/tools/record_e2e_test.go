package tools_test

// The flight recorder on real browsers: a conversation that fails over
// (the extension's Chromium killed between two calls → local) as the JSON
// lines, the spans and the HTML viewer (opened in headless Chromium) show
// it; and a typed password and a vault login that appear in none of them.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// tracedRecorder returns a recorder whose spans the SDK exports, as they
// end, to the returned in-memory exporter.
func tracedRecorder(t *testing.T) (*recorder.Recorder, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return recorder.New(recorder.Options{TracerProvider: tp}), exp
}

// jsonLines decodes a conversation's JSON lines export.
func jsonLines(t *testing.T, rec *recorder.Recorder, conv string) (string, []recorder.Entry) {
	var buf bytes.Buffer
	require.NoError(t, rec.WriteJSONL(&buf, conv))
	var es []recorder.Entry
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var e recorder.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		es = append(es, e)
	}
	return buf.String(), es
}

func TestRecorderShowsAFailoverInTheTraceTheSpansAndTheViewer(t *testing.T) {
	site := chromiumtest.FixtureServer(t, nil)
	lb := local.New(local.Options{Logger: quietLogger()})
	t.Cleanup(func() { lb.Close() })
	h := startRuntimeWith(t, func(c *runtime.Config) { c.Fallbacks = []browserbackend.Provider{local.NewProvider(lb)} })
	ext := startExtension(t, h)
	rec, spans := tracedRecorder(t)
	tl := tools.New(tools.Options{Selector: h.rt.Selector, Recorder: rec, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
	inv := h.invocation("conv-failover")
	ctx := stepCtx(t)

	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: site.URL + "/"})
	require.NoError(t, err)
	require.Equal(t, browserbackend.KindExtension, nav.Backend)
	ext.Kill() // the extension goes with its browser, mid-conversation
	h.waitGone(t, wire.InterfaceChromeExtension)
	nav, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: site.URL + "/"})
	require.NoError(t, err)
	require.Equal(t, browserbackend.KindLocal, nav.Backend, "failed over")
	shot, err := tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{})
	require.NoError(t, err)
	png, err := os.ReadFile(shot.Path)
	require.NoError(t, err)

	// The JSON lines: three calls; the second's attempts fail over from
	// the extension to local; its commands ran on local; the screenshot's
	// bytes are there.
	_, es := jsonLines(t, rec, inv.ConversationID)
	var calls []recorder.Entry
	var failovers, localNavs []recorder.Entry
	var shots []recorder.Entry
	for _, e := range es {
		switch {
		case e.Type == recorder.TypeCall:
			calls = append(calls, e)
		case e.Type == recorder.TypeAttempt && e.Failover:
			failovers = append(failovers, e)
		case e.Type == recorder.TypeCDP && e.Command.Method == "Page.navigate" && e.Backend == "local":
			localNavs = append(localNavs, e)
		case e.Type == recorder.TypeScreenshot:
			shots = append(shots, e)
		}
	}
	require.Len(t, calls, 3)
	assert.Equal(t, []string{"extension", "local", "local"}, []string{calls[0].Backend, calls[1].Backend, calls[2].Backend})
	require.NotEmpty(t, failovers)
	for _, f := range failovers {
		assert.Equal(t, uint64(2), f.Call)
		assert.Equal(t, "extension", f.Backend)
		assert.Equal(t, browserbackend.CodeNoClient, f.Attempt.Code, "the remembered extension is gone")
	}
	require.NotEmpty(t, localNavs)
	assert.Equal(t, uint64(2), localNavs[0].Call)
	assert.Contains(t, localNavs[0].Command.Params, site.URL)
	require.Len(t, shots, 1)
	assert.Equal(t, png, shots[0].Shot.Data)

	// The spans: the failed attempt is a child of the second navigate's
	// span, and so are its commands; the screenshot is an event of its
	// call's span.
	var navSpans []tracetest.SpanStub
	var failed []tracetest.SpanStub
	cdpParents := map[string]bool{}
	var shotEvent bool
	for _, sp := range spans.GetSpans() {
		switch {
		case sp.Name == "tool navigate":
			navSpans = append(navSpans, sp)
		case sp.Name == "tool screenshot":
			shotEvent = slices.ContainsFunc(sp.Events, func(ev sdktrace.Event) bool {
				return ev.Name == "screenshot" && slices.Contains(ev.Attributes, attribute.String("sha256", shot.SHA256))
			})
		case sp.Name == "attempt extension" && slices.Contains(sp.Attributes, recorder.AttrFailover.Bool(true)):
			failed = append(failed, sp)
		case strings.HasPrefix(sp.Name, "cdp "):
			cdpParents[sp.Parent.SpanID().String()] = true
		}
	}
	require.Len(t, navSpans, 2)
	second := navSpans[1]
	assert.Contains(t, second.Attributes, recorder.AttrBackend.String("local"))
	require.NotEmpty(t, failed)
	assert.Equal(t, second.SpanContext.SpanID(), failed[0].Parent.SpanID())
	assert.True(t, cdpParents[second.SpanContext.SpanID().String()], "the second navigate's commands are its children")
	assert.True(t, shotEvent, "the screenshot is an event of its call's span")

	// The viewer, opened from a file in headless Chromium: the failover
	// step and the screenshot (decoded) are on the page, and the page
	// itself renders.
	file := filepath.Join(t.TempDir(), "trace.html")
	var html bytes.Buffer
	require.NoError(t, rec.WriteHTML(&html, inv.ConversationID))
	require.NoError(t, os.WriteFile(file, html.Bytes(), 0o600))
	viewer := chromiumtest.Start(t)
	tab := chromiumtest.DialRawTab(t, viewer.BrowserWSURL, "")
	tab.Call("Page.navigate", tab.SessionID, `{"url":"file://`+file+`"}`) // answers once the document is committed
	var shown struct {
		Failover string `json:"failover"`
		Note     string `json:"note"`
		Calls    int    `json:"calls"`
		ImgWidth int    `json:"imgWidth"`
		LocalNav bool   `json:"localNav"`
	}
	rawEvalJSON(t, tab, `new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', r)).then(() => {
		const f = document.querySelector('[data-call="2"] [data-failover]');
		const img = document.querySelector('[data-call="3"] li.shot img');
		return JSON.stringify({
			failover: f ? f.dataset.failover : '',
			note: f ? f.textContent : '',
			calls: document.querySelectorAll('article.call').length,
			imgWidth: img ? img.naturalWidth : 0,
			localNav: [...document.querySelectorAll('[data-call="2"] li.cdp[data-method="Page.navigate"]')].some(li => li.textContent.includes('on local')),
		});
	})`, &shown)
	assert.Equal(t, "extension", shown.Failover)
	assert.Contains(t, shown.Note, "failover")
	assert.Equal(t, 3, shown.Calls)
	assert.Equal(t, shot.Width, shown.ImgWidth, "the screenshot is decoded inline")
	assert.True(t, shown.LocalNav)
	var capture struct{ Data string }
	require.NoError(t, json.Unmarshal(tab.Call("Page.captureScreenshot", tab.SessionID, `{"format":"png"}`), &capture))
	img, err := base64.StdEncoding.DecodeString(capture.Data)
	require.NoError(t, err)
	assert.Greater(t, len(img), 1000, "the viewer renders")
}

// evalJSON evaluates expr (a promise of a JSON string) in the tab and
// decodes the string into out.
func rawEvalJSON(t *testing.T, tab *chromiumtest.RawTab, expr string, out any) {
	params, err := json.Marshal(map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	require.NoError(t, err)
	var res struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(tab.Call("Runtime.evaluate", tab.SessionID, string(params)), &res))
	require.NoError(t, json.Unmarshal([]byte(res.Result.Value), out), res.Result.Value)
}

func TestRecorderNeverHoldsATypedPasswordOrAVaultValue(t *testing.T) {
	gs := startGuardSites(t)
	b := local.New(local.Options{Logger: quietLogger(), Args: []string{hostRules}})
	t.Cleanup(func() { b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	const typed = "typed-Pa55word-never-recorded"
	vault := tools.VaultFunc(func(context.Context, browserbackend.Invocation, string) (tools.Credential, error) {
		return tools.Credential{Username: "ada-vault-user", Password: testPassword}, nil
	})
	rec, spans := tracedRecorder(t)
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger(), Vault: vault})
	inv := browserbackend.Invocation{ConversationID: "conv-secrets", InterfaceID: "cli"}
	// Recording on for these calls only.
	ctx := recorder.NewContext(stepCtx(t), rec)

	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: gs.allowed + "/login"})
	require.NoError(t, err)
	_, err = tl.Act().Type(ctx, inv, tools.TypeInput{Target: tools.Target{Selector: "#p"}, Text: typed})
	require.NoError(t, err)
	_, err = tl.Act().PressKey(ctx, inv, tools.PressKeyInput{Key: "a", Target: tools.Target{Selector: "#p"}})
	require.NoError(t, err)
	fields := []tools.LoginField{
		{Target: tools.Target{Selector: "#u"}, Value: tools.PlaceholderUsername},
		{Target: tools.Target{Selector: "#p"}, Value: tools.PlaceholderPassword},
	}
	gctx := guard.NewContext(ctx, guard.MustNew(gs.policy))
	done, err := tl.Login(gctx, inv, tools.LoginInput{Credential: "login:allowed.test", Fields: fields, Submit: tools.Target{Selector: "#signin"}})
	require.NoError(t, err)
	assert.True(t, done.Submitted)
	assert.Equal(t, testPassword, gs.loginPassword.Load(), "the form was filled from the vault")
	_, err = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.NoError(t, err)
	_, err = tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{})
	require.NoError(t, err)

	jl, es := jsonLines(t, rec, inv.ConversationID)
	var insert int
	for _, e := range es {
		if e.Type == recorder.TypeCDP && e.Command.Method == "Input.insertText" {
			insert++
			assert.True(t, e.Command.Redacted)
			assert.Positive(t, e.Command.ParamsBytes)
		}
	}
	assert.Equal(t, 3, insert, "the typed text and both login fields")
	var html bytes.Buffer
	require.NoError(t, rec.WriteHTML(&html, inv.ConversationID))
	var spanText strings.Builder
	require.NotEmpty(t, spans.GetSpans())
	for _, sp := range spans.GetSpans() {
		fmt.Fprintln(&spanText, sp.Name, sp.Status.Description)
		for _, kv := range sp.Attributes {
			fmt.Fprintln(&spanText, kv.Key, kv.Value.Emit())
		}
		for _, ev := range sp.Events {
			fmt.Fprintln(&spanText, ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintln(&spanText, kv.Key, kv.Value.Emit())
			}
		}
	}
	for name, text := range map[string]string{"json lines": jl, "html": html.String(), "spans": spanText.String()} {
		for _, secret := range []string{typed, testPassword, "ada-vault-user"} {
			assert.NotContains(t, text, secret, "%s holds %q", name, secret)
		}
	}
}
