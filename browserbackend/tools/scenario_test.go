package tools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/hostproxy/tabs"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// stepTimeout bounds each tool call of the scenario: a guard against a hang,
// not synchronisation (every call also has its own deadline).
const stepTimeout = 60 * time.Second

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	t.Cleanup(cancel)
	return ctx
}

// scenario is THE tool scenario every backend must pass (issue 6): navigate
// (through a redirect chain) → snapshot → type → select → click submit →
// wait for text → extract → links (filter, default and max limits) →
// screenshot (PNG decodes, dimensions as set, sha256 matches the file).
func scenario(t *testing.T, tl *tools.Tools, inv browserbackend.Invocation, s *site, want browserbackend.Kind) {
	ctx := stepCtx(t)

	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url("/start")})
	require.NoError(t, err, "navigate")
	assert.Equal(t, s.url("/form"), nav.URL, "the redirect chain ends on /form")
	assert.True(t, nav.Redirected)
	assert.Equal(t, fixtureTitle, nav.Title)
	assert.Equal(t, want, nav.Backend, "served by the backend under test")

	snap, err := tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.NoError(t, err, "snapshot")
	assert.Equal(t, want, snap.Backend)
	field := findNode(t, snap, "textbox", "Query")
	button := findNode(t, snap, "button", "Send")
	combo := findNode(t, snap, "combobox", "Colour")
	assert.Contains(t, snap.Text, innerFrameText, "the same-origin frame's tree is included")
	if !strings.Contains(snap.Text, crossFrameText) {
		assert.NotEmpty(t, snap.SkippedFrames, "a cross-origin frame is either read or reported as skipped")
	}

	typed, err := tl.Act().Type(ctx, inv, tools.TypeInput{Target: tools.Target{Ref: field.Ref}, Text: "hello <world>"})
	require.NoError(t, err, "type")
	assert.Equal(t, field.Ref, typed.Ref)

	sel, err := tl.Act().SelectOption(ctx, inv, tools.SelectOptionInput{Target: tools.Target{Ref: combo.Ref}, Values: []string{"Green"}})
	require.NoError(t, err, "select option")
	assert.Equal(t, []string{"green"}, sel.Selected)

	_, err = tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Ref: button.Ref}})
	require.NoError(t, err, "click")

	w, err := tl.Read().WaitFor(ctx, inv, tools.WaitForInput{Text: "Thanks, hello <world>!"})
	require.NoError(t, err, "wait for text")
	assert.Contains(t, w.URL, "/done?")

	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.NoError(t, err, "extract")
	assert.Contains(t, ex.Text, "Thanks, hello <world>!")
	el, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "#colour"}})
	require.NoError(t, err, "extract element")
	assert.Equal(t, "colour=green", el.Text)

	links, err := tl.Read().Links(ctx, inv, tools.LinksInput{})
	require.NoError(t, err, "links")
	assert.Len(t, links.Links, tools.DefaultLinksLimit, "default limit")
	assert.Equal(t, fixtureItems+fixtureDocs, links.Total)
	assert.True(t, links.Truncated)
	assert.Equal(t, tools.Link{Href: s.url("/item/1"), Text: "Item 1"}, links.Links[0])

	docs, err := tl.Read().Links(ctx, inv, tools.LinksInput{Contains: "DOCS"})
	require.NoError(t, err, "links filtered")
	require.Len(t, docs.Links, fixtureDocs, "contains matches URL or text, case-insensitively")
	assert.Equal(t, tools.Link{Href: s.url("/docs/intro"), Text: "Read the docs"}, docs.Links[0])
	assert.Equal(t, tools.Link{Href: s.url("/guide"), Text: "More docs"}, docs.Links[2])
	assert.False(t, docs.Truncated)

	most, err := tl.Read().Links(ctx, inv, tools.LinksInput{Limit: tools.MaxLinksLimit})
	require.NoError(t, err, "links at the max limit")
	assert.Len(t, most.Links, tools.MaxLinksLimit)
	_, err = tl.Read().Links(ctx, inv, tools.LinksInput{Limit: tools.MaxLinksLimit + 1})
	assert.ErrorIs(t, err, tools.ErrInvalidInput, "a limit above the max is refused")

	shot, err := tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{Width: 640, Height: 480})
	require.NoError(t, err, "screenshot")
	assert.Equal(t, want, shot.Backend)
	data, err := os.ReadFile(shot.Path)
	require.NoError(t, err, "the screenshot is a file")
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), shot.SHA256, "sha256 matches the file")
	assert.Equal(t, int64(len(data)), shot.Size)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "the file is a PNG")
	assert.Equal(t, 640, img.Bounds().Dx())
	assert.Equal(t, 480, img.Bounds().Dy())
	assert.Equal(t, 640, shot.Width)
	assert.Equal(t, 480, shot.Height)
}

func findNode(t *testing.T, snap tools.SnapshotResult, role, name string) tools.SnapshotNode {
	t.Helper()
	for _, n := range snap.Nodes {
		if n.Role == role && n.Name == name {
			require.NotEmpty(t, n.Ref, "%s %q has a ref", role, name)
			return n
		}
	}
	t.Fatalf("no %s %q in the snapshot:\n%s", role, name, snap.Text)
	return tools.SnapshotNode{}
}

// cdpInspectTools returns Tools whose only provider is cdp-inspect on a fresh
// headless Chromium.
func cdpInspectTools(t testing.TB) (*tools.Tools, *chromiumtest.Browser) {
	b := chromiumtest.Start(t)
	return toolsOver(t, cdpInspectProvider(t, b), tools.Options{}), b
}

// cdpInspectProvider returns a cdp-inspect provider for b (its WebSocket URL,
// no DevToolsActivePort files, the other options given), closed when the
// test ends.
func cdpInspectProvider(t testing.TB, b *chromiumtest.Browser, opts ...cdpinspect.Option) *cdpinspect.Provider {
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled, cfg.Host, cfg.Port = true, "127.0.0.1", b.Port
	cfg.ProbeTimeoutMs = 5000 // a loaded test machine must not turn an answer into a timeout
	prov := cdpinspect.NewProvider(cfg, append([]cdpinspect.Option{cdpinspect.WithWebSocketURL(b.BrowserWSURL), cdpinspect.WithUserDataDirs()}, opts...)...)
	t.Cleanup(func() { prov.Close() })
	return prov
}

// toolsOver returns Tools over a Selector whose only provider is prov, with
// o's other options; the Selector, ScreenshotDir (a test directory) and
// Logger (quiet) are filled in where o leaves them unset. Kept clients are
// shut down when the test ends.
func toolsOver(t testing.TB, prov browserbackend.Provider, o tools.Options) *tools.Tools {
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	if o.ScreenshotDir == "" {
		o.ScreenshotDir = t.TempDir()
	}
	o.Selector = browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: o.Logger})
	tl := tools.New(o)
	if o.KeepClients || o.Guard != nil {
		t.Cleanup(tl.Shutdown)
	}
	return tl
}

// localTools returns Tools whose only provider is local (Playwright), with
// Close wired to the browser's per-conversation page.
func localTools(t testing.TB) (*tools.Tools, *local.Browser) {
	return localToolsWith(t, local.Options{})
}

// localToolsWith is localTools with the given local options.
func localToolsWith(t testing.TB, opts local.Options) (*tools.Tools, *local.Browser) {
	opts.Logger = quietLogger()
	b := local.New(opts)
	t.Cleanup(func() { b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	return tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()}), b
}

// scenarioPasses is a case of TestPageToolsOnEveryBackend: the tool
// scenario on the backend; on the extension, in a tab pinned to the
// conversation.
func scenarioPasses(t *testing.T, backend string, tl *tools.Tools, inv browserbackend.Invocation) {
	scenario(t, tl, inv, startSite(t), browserbackend.Kind(backend))
	if backend == string(browserbackend.KindExtension) {
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{})
		require.NoError(t, err)
		assert.NotEmpty(t, ex.TabID, "the conversation's tab is pinned")
	}
}

// TestScenarioPassesOnEveryBackend runs the scenario where
// TestPageToolsOnEveryBackend does not: over a client that speaks as the
// real Vellum extension does, and over the bridge's one page.
func TestScenarioPassesOnEveryBackend(t *testing.T) {
	s := startSite(t)
	t.Run("vellum-shaped client", func(t *testing.T) {
		// The same tool code over a client that speaks exactly as the real
		// Vellum extension does (WIRE-FACTS): bearer-only events naming no
		// tab, plain-text errors, the real Vellum.* shapes, sessionless
		// commands in the active tab.
		h := startRuntime(t)
		c, _ := startVellumClient(t, h)
		tl := h.tools(t)
		inv := h.invocation("conv-vellum")
		scenario(t, tl, inv, s, browserbackend.KindExtension)
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{})
		require.NoError(t, err)
		assert.Equal(t, ex.TabID, strconv.Itoa(c.ActiveTab()), "the agent's tab is the one it opened")
		raw, err := h.rt.Proxy.Request(stepCtx(t), hostproxy.Req{Method: wire.MethodListTabs,
			TargetClientID: c.ClientID(), SourceActor: h.rt.Auth.ActorPrincipalID()})
		require.NoError(t, err)
		var list struct{ Tabs []tabs.Tab }
		require.NoError(t, json.Unmarshal(raw, &list))
		assert.Len(t, list.Tabs, 2, "the browser's start tab and the one tab the agent opened: no orphan about:blank")
		st := c.Stats()
		assert.Empty(t, st.ResultsRefused, "every result was accepted")
		assert.Zero(t, st.EventsRefused, "every event post was accepted")
	})
	t.Run("host-bridge, one page", func(t *testing.T) {
		h := startRuntime(t)
		startBridge(t, h)
		scenario(t, h.tools(t), h.invocation("conv-bridge"), s, browserbackend.KindHostBridge)
	})
}

// refDesc is the real descriptor of a reference kind, for a fake provider
// of that kind (its modes, aliases and capabilities).
func refDesc(k browserbackend.Kind) *browserbackend.Descriptor {
	d := hostproxytest.ReferenceDescriptor(k)
	return &d
}
