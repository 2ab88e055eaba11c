package tools_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// paragraphs returns a page of n numbered paragraphs (two snapshot nodes
// each: the paragraph and its text).
func paragraphs(n int) string {
	var b strings.Builder
	b.WriteString("<!doctype html><title>many</title>")
	for i := range n {
		fmt.Fprintf(&b, "<p>para %d</p>\n", i)
	}
	return b.String()
}

// snapshotAt navigates inv's page to url and returns its snapshot (the
// default source).
func snapshotAt(t *testing.T, tl *tools.Tools, inv browserbackend.Invocation, url string) tools.SnapshotResult {
	t.Helper()
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: url})
	require.NoError(t, err)
	snap, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	return snap
}

// A page whose tree is larger than the default cap: the snapshot stops at
// DefaultSnapshotMaxNodes, and its text (what an agent reads) ends with a
// line that says it was cut; a page below the cap comes whole, with no such
// line.
func TestSnapshotLargerThanTheCapSaysItWasCut(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/over":  paragraphs(tools.DefaultSnapshotMaxNodes/2 + 100),
		"/under": paragraphs(1000),
	})
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "cap"}

	snap := snapshotAt(t, tl, inv, srv.URL+"/over")
	assert.True(t, snap.Truncated)
	assert.Len(t, snap.Nodes, tools.DefaultSnapshotMaxNodes)
	lines := strings.Split(strings.TrimSuffix(snap.Text, "\n"), "\n")
	require.Len(t, lines, tools.DefaultSnapshotMaxNodes+1, "every node's line, then the notice")
	last := lines[len(lines)-1]
	assert.Contains(t, last, fmt.Sprintf("snapshot cut at %d nodes", tools.DefaultSnapshotMaxNodes))
	assert.Contains(t, last, "max_nodes")
	assert.NotContains(t, snap.Text, fmt.Sprintf("para %d", tools.DefaultSnapshotMaxNodes/2+99), "the last paragraph is past the cap")

	snap = snapshotAt(t, tl, inv, srv.URL+"/under")
	assert.False(t, snap.Truncated)
	assert.Contains(t, snap.Text, `"para 999"`)
	assert.NotContains(t, snap.Text, "snapshot cut")
}

// A page with frames before, between and after its own text, one of them
// holding a frame of its own: every frame's tree is in the snapshot, each
// under its iframe element, in document order.
func TestSnapshotMultiFramePageIsInDocumentOrder(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/top": `<!doctype html><title>top</title><p>top start</p>
<iframe src="/a" title="frame a"></iframe><p>top middle</p>
<iframe src="/b" title="frame b"></iframe><p>top end</p>`,
		"/a": `<!doctype html><title>a</title><p>inside a</p><button>a button</button>`,
		"/b": `<!doctype html><title>b</title><p>b before</p><iframe src="/c" title="frame c"></iframe><p>b after</p>`,
		"/c": `<!doctype html><title>c</title><p>inside c</p>`,
	})
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "frames"}
	snap := snapshotAt(t, tl, inv, srv.URL+"/top")
	require.Empty(t, snap.SkippedFrames)

	order := []string{`"top start"`, `- frame "` + srv.URL + `/a"`, `"inside a"`, `"a button"`, `"top middle"`,
		`- frame "` + srv.URL + `/b"`, `"b before"`, `- frame "` + srv.URL + `/c"`, `"inside c"`, `"b after"`, `"top end"`}
	at := -1
	for _, s := range order {
		i := strings.Index(snap.Text, s)
		require.GreaterOrEqual(t, i, 0, "%s is in the snapshot:\n%s", s, snap.Text)
		assert.Greater(t, i, at, "%s comes after the line before it in the list:\n%s", s, snap.Text)
		at = i
	}
	depth := func(s string) int {
		for _, line := range strings.Split(snap.Text, "\n") {
			if strings.Contains(line, s) {
				return len(line) - len(strings.TrimLeft(line, " "))
			}
		}
		return -1
	}
	assert.Greater(t, depth(`"inside c"`), depth(`"b before"`), "a nested frame is indented under its parent frame")
	for _, n := range snap.Nodes {
		if n.Name == "inside c" {
			assert.Equal(t, srv.URL+"/c", n.Frame)
		}
	}
	btn := findNode(t, snap, "button", "a button")
	require.NotEmpty(t, btn.Ref)
	_, err := tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: btn.Ref}})
	require.NoError(t, err, "a ref from a child frame works")
}

// richPage holds most kinds of HTML element an agent meets, named in every
// way HTML and ARIA allow, and content hidden in every way CSS and ARIA
// allow.
const richPage = `<!doctype html><html lang="en"><head><title>rich</title><style>.vh{visibility:hidden}.dn{display:none}.dc{display:contents}.ext::after{content:" (opens new tab)"}</style></head><body>
<header><nav aria-label="Primary"><ul><li><a href="/a">Home</a></li><li><a href="/b"><img src="x.png" alt="Logo"> Shop</a></li></ul></nav></header>
<main>
<h1>Title <em>here</em></h1>
<h3 id="lh">Labelled heading</h3>
<section aria-labelledby="lh"><p>Some <strong>bold</strong> text and <code>code</code>.</p></section>
<section><p>plain section</p></section>
<article><h2>Art</h2><p>para one</p></article>
<aside>side</aside>
<form aria-label="Sign up" action="/s">
<label for="u">User name</label><input id="u" name="u" value="bob">
<label>Wrapped <input type="email" name="e" placeholder="you@x"></label>
<input type="password" id="pw" aria-label="Password" value="s3cret">
<input type="search" aria-label="Find">
<input type="checkbox" id="c1" checked><label for="c1">Remember</label>
<input type="radio" name="r" id="r1"><label for="r1">One</label>
<input type="number" aria-label="Count" value="3">
<input type="range" aria-label="Volume" value="30">
<input type="submit">
<input type="reset" value="Clear">
<input type="button" value="Push">
<input type="hidden" value="h">
<input type="text" title="Titled">
<input type="text" placeholder="Only placeholder">
<textarea aria-label="Notes">some notes</textarea>
<select aria-label="Colour"><option>Red</option><option selected>Green</option></select>
<select size="3" aria-label="Many"><option>A</option><option>B</option></select>
<fieldset><legend>Group legend</legend><input type="checkbox" aria-label="In group"></fieldset>
<button type="button" aria-label="Close dialog">X</button>
<button><span>Nested</span> <b>text</b></button>
<button aria-labelledby="lh">Labelled by</button>
<button disabled>Disabled</button>
</form>
<div role="button" tabindex="0">Div button</div>
<div role="checkbox" aria-checked="true" aria-label="Aria check"></div>
<div role="dialog" aria-label="Dlg"><p>in dialog</p></div>
<div aria-label="Named div">named div text</div>
<div aria-hidden="true"><button>Hidden by aria</button></div>
<div class="dn"><button>Hidden by display</button></div>
<div class="vh"><button>Hidden by visibility</button><span style="visibility:visible">visible child</span></div>
<div class="dc"><button>In contents</button></div>
<ol><li>first</li><li>second</li></ol>
<dl><dt>Term</dt><dd>Definition</dd></dl>
<table><caption>Prices</caption><thead><tr><th>Item</th><th>Cost</th></tr></thead><tbody><tr><td>Tea</td><td>2</td></tr></tbody></table>
<figure><img src="y.png" alt="Chart"><figcaption>Fig caption</figcaption></figure>
<img src="z.png" alt="">
<img src="w.png">
<hr>
<details><summary>More</summary><p>detail text</p></details>
<blockquote>quoted</blockquote>
<p>Line one<br>line two</p>
<a href="/c" title="Link title"></a>
<a>no href</a>
<progress value="3" max="10" aria-label="Prog"></progress>
<span role="link" tabindex="0">span link</span>
<div role="tablist"><div role="tab" aria-selected="true">Tab A</div></div>
<iframe src="data:text/html,<p>frame text</p>" title="Inner"></iframe>
</main>
<footer>foot</footer>
<section aria-label="Review cases">
<label>Email <input type="email"><button type="button">Clear</button></label>
<input type="checkbox" id="terms"><label for="terms">I accept the <a href="/terms">terms</a></label>
<span id="hiddenlabel" hidden>Search site</span><input aria-labelledby="hiddenlabel">
<div role="textbox" contenteditable aria-label="Message">Hello there</div>
<a href="/home"><img src="logo.png" aria-label="Home"></a>
<button type="button"><svg width="10" height="10"><title>Search</title><circle cx="5" cy="5" r="4"></circle></svg></button>
<a href="/docs" class="ext">Docs</a>
<p style="text-transform:uppercase">shout</p>
<p style="-webkit-text-security:disc">1234</p>
<div aria-hidden="TRUE"><button>Hidden by aria in capitals</button></div>
<button role="presentation">Keeps its role</button>
</section>
<section aria-label="Comparison cases">
<label><input type="checkbox"> Remember me</label>
<label><input type="checkbox"> Keep <b>me</b> signed in</label>
<fieldset><legend>Size</legend><label><input type="radio" name="sz"> Small</label><label><input type="radio" name="sz"> Large</label></fieldset>
<div role="combobox" aria-label="Sort" tabindex="0">Relevance</div>
<div role="slider" aria-valuenow="3" aria-label="Rating" tabindex="0"></div>
<div role="spinbutton" aria-valuenow="5" aria-label="Qty" tabindex="0">5</div>
<div contenteditable aria-label="Scratch">Editable notes</div>
<div role="textbox" aria-label="Box">typed</div>
<input type="color" aria-label="Tint">
<table role="presentation"><tr><td>layout cell</td></tr></table>
<table><tr><th>Pick</th></tr><tr><td><input type="checkbox" aria-label="Sel"></td></tr></table>
<button aria-label="Like"><svg width="10" height="10"><circle cx="5" cy="5" r="4"></circle></svg></button>
<div role="img" aria-label="4 stars">★★★★</div>
<p><s>79.99</s> now 59.99</p>
<address>1 Main St</address>
<abbr title="garbage collection">GC</abbr>
<div role="region">unnamed region</div>
<select aria-label="Grouped"><optgroup label="G"><option>o1</option></optgroup><option>o2</option></select>
</section>
<my-el></my-el>
<script>customElements.define('my-el', class extends HTMLElement { constructor(){ super(); this.attachShadow({mode:'open'}).innerHTML = '<button>Shadow button</button><slot></slot>'; } });</script>
</body></html>`

// The DOM snapshot (the default) computes each element's role, name and
// value the way Chromium's accessibility tree does: on a page of most kinds
// of element, every node of one source is a node of the other with the
// same role, name, value and ref, and hidden content is in neither. The
// accessibility tree's extra nodes are the ones the DOM snapshot leaves out
// on purpose: the text inside a text field (its value says it), a
// drop-down's popup (its options are under the drop-down) and text nodes
// without text.
func TestSnapshotFromTheDOMNamesWhatTheAccessibilityTreeNames(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{"/rich": richPage})
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "rich"}
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/rich"})
	require.NoError(t, err)
	ax, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{Source: tools.SnapshotSourceAccessibility})
	require.NoError(t, err)
	dom, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.Equal(t, ax.URL, dom.URL)
	assert.Equal(t, "rich", dom.Title)

	type key struct{ Ref, Role, Name, Value, Frame string }
	keys := func(s tools.SnapshotResult, left func(i int) bool) []key {
		var out []key
		for i, n := range s.Nodes {
			if !left(i) {
				out = append(out, key{n.Ref, n.Role, n.Name, n.Value, n.Frame})
			}
		}
		return out
	}
	axKeys := keys(ax, func(i int) bool {
		n := ax.Nodes[i]
		switch {
		case n.Role == "MenuListPopup", n.Role == "StaticText" && n.Name == "":
			return true
		case n.Role == "StaticText" && i > 0:
			p := ax.Nodes[i-1]
			return p.Depth == n.Depth-1 && p.Value != "" && p.Value == n.Name
		}
		return false
	})
	assert.Equal(t, axKeys, keys(dom, func(int) bool { return false }),
		"accessibility tree:\n%s\nDOM snapshot:\n%s", ax.Text, dom.Text)
	for _, hidden := range []string{"Hidden by aria", "Hidden by display", "Hidden by visibility", "detail text", "s3cret"} {
		assert.NotContains(t, dom.Text, hidden)
	}
	assert.Contains(t, dom.Text, `textbox "Password" value="••••••"`, "a password field's value is masked")
	assert.Contains(t, dom.Text, `- frame "data:text/html,<p>frame text</p>"`)
}

// A frame of another site runs in a process of its own, and the page's DOM
// snapshot does not hold its document: the snapshot reads it through the
// frame's own target and shows it under its iframe's line, its elements
// with frame refs, on cdp-inspect and local; on a backend that cannot
// attach to it, the line under the frame's says why it was not read, and
// SkippedFrames lists the frame.
func TestSnapshotReadsACrossSiteFrameThroughItsTarget(t *testing.T) {
	other := chromiumtest.FixtureServer(t, map[string]string{"/x": `<!doctype html><title>x</title><p>far text</p><button>Pay</button>`})
	far := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/x"
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/top": `<!doctype html><title>top</title><p>near text</p><iframe src="` + far + `"></iframe><button>Here</button>`})
	for _, be := range []struct {
		name     string
		tl       func(t *testing.T) (*tools.Tools, browserbackend.Invocation)
		mustRead bool
	}{
		{"cdp-inspect", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := cdpInspectTools(t)
			return tl, browserbackend.Invocation{ConversationID: "cross"}
		}, true},
		{"local", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := localTools(t)
			return tl, browserbackend.Invocation{ConversationID: "cross"}
		}, true},
		{"extension", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			startExtension(t, h)
			return h.tools(t), h.invocation("cross")
		}, false},
		{"vellum-shaped client", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			startVellumClient(t, h)
			return h.tools(t), h.invocation("cross")
		}, false},
		{"host-bridge", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			runBridgeOn(t, h, chromiumtest.Start(t), true)
			return h.tools(t), h.invocation("cross")
		}, false},
	} {
		t.Run(be.name, func(t *testing.T) {
			tl, inv := be.tl(t)
			snap := snapshotAt(t, tl, inv, srv.URL+"/top")
			assert.Contains(t, snap.Text, `"near text"`)
			require.Contains(t, snap.Text, `- frame "`+far+`"`)
			assert.Contains(t, snap.Text, `button "Here"`, "the page after the frame")
			if !be.mustRead && strings.Contains(snap.Text, "its content was not read: ") {
				t.Logf("%s does not read it:\n%s", be.name, snap.Text)
				require.Len(t, snap.SkippedFrames, 1)
				assert.True(t, strings.HasPrefix(snap.SkippedFrames[0], far+": "), snap.SkippedFrames[0])
				assert.NotContains(t, snap.Text, "not read: ]", "it says why")
				return
			}
			assert.Empty(t, snap.SkippedFrames)
			pay := findNode(t, snap, "button", "Pay")
			assert.True(t, strings.HasPrefix(pay.Ref, tools.FrameRefPrefix), pay.Ref)
			assert.Equal(t, far, pay.Frame)
			lines := strings.Split(snap.Text, "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `- frame "`+far+`"`) })
			require.GreaterOrEqual(t, i, 0)
			require.Greater(t, len(lines), i+2)
			assert.Contains(t, lines[i+2], `"far text"`, "under the iframe's line:\n%s", snap.Text)

			again, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{Ref: pay.Ref})
			require.NoError(t, err)
			assert.Equal(t, "- button \"Pay\" [ref="+pay.Ref+"]\n", again.Text, "the frame's refs are stable, and a ref narrows to its subtree")
		})
	}
}

// An element of a cross-site frame is acted on by its frame ref as any
// other: typed into, clicked (at its place in the page's viewport, the
// frame lower on the page than its own origin), read; on cdp-inspect,
// local and the desktop bridge.
func TestSnapshotFrameRefsAreActionable(t *testing.T) {
	other := chromiumtest.FixtureServer(t, map[string]string{"/pay": `<!doctype html><title>pay</title>
<label>Card <input id=card></label><button onclick="document.getElementById('out').textContent='paid '+document.getElementById('card').value">Pay</button><p id=out>unpaid</p>`})
	far := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/pay"
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/shop": `<!doctype html><title>shop</title><div style="height:300px">spacer</div><iframe src="` + far + `" style="margin-left:200px" width=400 height=200></iframe>`})
	for _, be := range []struct {
		name string
		tl   func(t *testing.T) (*tools.Tools, browserbackend.Invocation)
	}{
		{"cdp-inspect", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := cdpInspectTools(t)
			return tl, browserbackend.Invocation{ConversationID: "frame-refs"}
		}},
		{"local", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := localTools(t)
			return tl, browserbackend.Invocation{ConversationID: "frame-refs"}
		}},
		{"host-bridge", func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			runBridgeOn(t, h, chromiumtest.Start(t), true)
			return h.tools(t), h.invocation("frame-refs")
		}},
	} {
		t.Run(be.name, func(t *testing.T) {
			tl, inv := be.tl(t)
			snap := snapshotAt(t, tl, inv, srv.URL+"/shop")
			card := findNode(t, snap, "textbox", "Card")
			pay := findNode(t, snap, "button", "Pay")
			typed, err := tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Ref: card.Ref}, Text: "4242"})
			require.NoError(t, err)
			assert.Equal(t, card.Ref, typed.Ref)
			clicked, err := tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: pay.Ref}})
			require.NoError(t, err)
			assert.Greater(t, clicked.X, 200.0, "inside the frame, right of its margin")
			assert.Greater(t, clicked.Y, 300.0, "inside the frame, below the spacer")
			out, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{Search: "paid"})
			require.NoError(t, err)
			assert.Contains(t, out.Text, `"paid 4242"`, out.Text)
			ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{Target: tools.Target{Ref: card.Ref}})
			require.NoError(t, err)
			assert.Equal(t, card.Ref, ex.Ref)
		})
	}
}

// BenchmarkSnapshot times tools.Snapshot on a kept cdp-inspect client over
// the pages of the MCP comparison (bench/harness): a 3,000-word article and
// a page of 5,000 elements.
func BenchmarkSnapshot(b *testing.B) {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing")
	var art strings.Builder
	art.WriteString("<!doctype html><title>article</title><article><h1>A long article</h1>")
	for i, n := 0, 0; n < 3000; i++ {
		if i%5 == 0 {
			fmt.Fprintf(&art, "<h2>Section %d</h2>", i/5+1)
		}
		art.WriteString("<p>")
		for j := 0; j < 60 && n < 3000; j++ {
			art.WriteString(words[(n*7+i)%len(words)] + " ")
			n++
		}
		art.WriteString("</p>\n")
	}
	var big strings.Builder
	big.WriteString("<!doctype html><title>big</title><h1>Many elements</h1><table>")
	for i := range 712 {
		fmt.Fprintf(&big, `<tr><td>row %d</td><td><a href="#r%d">item %d</a></td><td><button type="button">act %d</button><span> ok</span></td></tr>`, i, i, i, i)
	}
	big.WriteString("</table>")
	srv := chromiumtest.FixtureServer(b, map[string]string{"/article": art.String(), "/big": big.String()})
	br := chromiumtest.Start(b)
	insp := cdpInspectProvider(b, br)
	tl := toolsOver(b, insp, tools.Options{KeepClients: true})
	inv := browserbackend.Invocation{ConversationID: "bench"}
	ctx := context.Background()
	for _, pg := range []string{"/article", "/big"} {
		for _, src := range []string{tools.SnapshotSourceDOM, tools.SnapshotSourceAccessibility} {
			b.Run(strings.TrimPrefix(pg, "/")+"/"+src, func(b *testing.B) {
				if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: srv.URL + pg}); err != nil {
					b.Fatal(err)
				}
				var ds []time.Duration
				for b.Loop() {
					t0 := time.Now()
					if _, err := tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{Source: src}); err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(t0))
				}
				slices.Sort(ds)
				b.ReportMetric(float64(ds[len(ds)/2])/1e6, "median-ms")
			})
		}
	}
}

// viewsPage has landmarks, a form, prose, a list a button grows, and an
// element only a click listener makes interactive.
const viewsPage = `<!doctype html><title>views</title>
<nav><a href="#a">Alpha</a> <a href="#b">Beta</a></nav>
<main><h1>Basket</h1><p>Your basket holds three items, total 42 euros.</p>
<form aria-label="Add item"><label>Item <input id=item></label>
<button type=button onclick="var li=document.createElement('li');li.textContent=document.getElementById('item').value;document.getElementById('list').append(li)">Add</button></form>
<ul id=list><li>apple</li><li>pear</li></ul>
<div onclick="this.textContent='opened'">More options</div></main>`

// Narrowed snapshots on a real page, every backend: interactive keeps what
// can be acted on under its landmarks and headings, search the matches under
// their ancestors, ref a subtree, max_depth the top levels; diff says what an
// action changed.
func TestSnapshotViewsAndDiff(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{"/views": viewsPage})
	for _, be := range []struct {
		name string
		tl   func(t *testing.T) *tools.Tools
	}{
		{"cdp-inspect", func(t *testing.T) *tools.Tools { tl, _ := cdpInspectTools(t); return tl }},
		{"local", func(t *testing.T) *tools.Tools { tl, _ := localTools(t); return tl }},
	} {
		t.Run(be.name, func(t *testing.T) {
			tl := be.tl(t)
			inv := browserbackend.Invocation{ConversationID: "views"}
			snap := func(in tools.SnapshotInput) tools.SnapshotResult {
				t.Helper()
				res, err := tl.Read().Snapshot(stepCtx(t), inv, in)
				require.NoError(t, err)
				return res
			}
			whole := snapshotAt(t, tl, inv, srv.URL+"/views")
			assert.NotContains(t, whole.Text, "clickable", "the whole tree is as it always was")

			act := snap(tools.SnapshotInput{Interactive: true})
			for _, want := range []string{`- navigation`, `link "Alpha"`, `heading "Basket"`, `form "Add item"`, `textbox "Item"`, `button "Add"`, `clickable "More options"`} {
				assert.Contains(t, act.Text, want, act.Text)
			}
			assert.NotContains(t, act.Text, "42 euros")
			assert.NotContains(t, act.Text, "apple")
			assert.Less(t, len(act.Text), len(whole.Text)/2)

			found := snap(tools.SnapshotInput{Search: "TOTAL 42"})
			assert.Contains(t, found.Text, `text "Your basket holds three items, total 42 euros."`)
			assert.True(t, strings.HasPrefix(found.Text, "- main"), found.Text)
			assert.NotContains(t, found.Text, "Alpha")

			form := findNode(t, whole, "form", "Add item")
			sub := snap(tools.SnapshotInput{Ref: form.Ref, Interactive: true})
			assert.Equal(t, "- form \"Add item\" [ref="+form.Ref+"]\n  - textbox \"Item\" [ref="+findNode(t, whole, "textbox", "Item").Ref+"]\n  - button \"Add\" [ref="+findNode(t, whole, "button", "Add").Ref+"]\n", sub.Text)

			top := snap(tools.SnapshotInput{MaxDepth: 1})
			for _, n := range top.Nodes {
				assert.Zero(t, n.Depth)
			}
			assert.Contains(t, top.Text, "- main")

			same := snap(tools.SnapshotInput{Diff: true})
			require.NotNil(t, same.Diff)
			assert.Equal(t, "[no change since the previous snapshot]\n", same.Text)

			_, err := tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Ref: findNode(t, whole, "textbox", "Item").Ref}, Text: "plum"})
			require.NoError(t, err)
			_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: findNode(t, whole, "button", "Add").Ref}})
			require.NoError(t, err)
			d := snap(tools.SnapshotInput{Diff: true})
			require.NotNil(t, d.Diff)
			assert.False(t, d.Diff.Whole)
			assert.Contains(t, d.Text, `+ listitem [ref=`, d.Text)
			assert.Contains(t, d.Text, `~ textbox "Item" value="plum"`, d.Text)
			assert.Less(t, len(d.Text), len(whole.Text)/2)

			_, err = tl.Close(stepCtx(t), inv, tools.ReleaseInput{})
			require.NoError(t, err)
			_, err = tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/views"})
			require.NoError(t, err)
			first := snap(tools.SnapshotInput{Diff: true, Interactive: true})
			require.NotNil(t, first.Diff)
			assert.True(t, first.Diff.Whole, "Close forgot the conversation's snapshot")
			assert.True(t, strings.HasPrefix(first.Text, "[no previous snapshot"), first.Text)
			assert.Contains(t, first.Text, `button "Add"`)
			again := snap(tools.SnapshotInput{Diff: true, Interactive: true})
			assert.Equal(t, "[no change since the previous snapshot]\n", again.Text, "compared with the last call's, narrowed like this one")
		})
	}
}
