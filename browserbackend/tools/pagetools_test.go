package tools_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

func evalJSON(t *testing.T, tl *tools.Tools, inv browserbackend.Invocation, fn string, out any) {
	t.Helper()
	res, err := tl.Dev().Evaluate(stepCtx(t), inv, tools.EvaluateInput{Function: fn})
	require.NoError(t, err, fn)
	require.NoError(t, json.Unmarshal([]byte(res.JSON), out), res.JSON)
}

func historyAndReload(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	a, b := page(`<b>first</b>`), page(`<b>second</b>`)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: a})
	require.NoError(t, err)
	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: b})
	require.NoError(t, err)

	back, err := tl.Act().GoBack(ctx, inv, tools.HistoryInput{})
	require.NoError(t, err)
	assert.Equal(t, a, back.URL, "back lands on the first page")
	assert.Equal(t, "dialogs", back.Title)
	assert.Equal(t, name, string(back.Backend))
	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Contains(t, ex.Text, "first", "the next call reads the page back went to")

	fwd, err := tl.Act().GoForward(ctx, inv, tools.HistoryInput{})
	require.NoError(t, err)
	assert.Equal(t, b, fwd.URL)
	_, err = tl.Act().GoForward(ctx, inv, tools.HistoryInput{})
	require.ErrorIs(t, err, tools.ErrInvalidInput, "nothing later in the history")

	rel, err := tl.Act().Reload(ctx, inv, tools.HistoryInput{})
	require.NoError(t, err)
	assert.Equal(t, b, rel.URL)
	var kind string
	evalJSON(t, tl, inv, `() => performance.getEntriesByType('navigation')[0].type`, &kind)
	assert.Equal(t, "reload", kind, "the document was loaded again")
}

func evaluateInPage(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: page(`<script>window.big = 'x'.repeat(5000)</script>`)})
	require.NoError(t, err)

	res, err := tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `async () => ({title: document.title, n: await Promise.resolve(2)})`})
	require.NoError(t, err)
	assert.JSONEq(t, `{"title":"dialogs","n":2}`, res.JSON)
	assert.False(t, res.Truncated)

	res, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `(el) => el.textContent`, Target: tools.Target{Selector: "#out"}})
	require.NoError(t, err)
	assert.Equal(t, `"none"`, res.JSON, "the element is the function's argument")

	res, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `() => { const o = {el: document.body}; o.self = o; return o }`})
	require.NoError(t, err)
	assert.JSONEq(t, `{"el":"<body>","self":"[circular]"}`, res.JSON, "nodes and cycles become strings")

	res, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `() => window.big`, MaxChars: 100})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Len(t, res.JSON, 100)
	assert.Equal(t, 5002, res.Chars)

	res, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `() => undefined`})
	require.NoError(t, err)
	assert.Equal(t, "undefined", res.JSON)

	_, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `() => { throw new Error("boom") }`})
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, tools.CodePageError, te.Code)
	assert.Contains(t, te.Message, "boom")

	_, err = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{Function: `() => {`})
	require.ErrorAs(t, err, &te, "a function that does not parse")
	assert.Equal(t, tools.CodePageError, te.Code)
}

func consoleMessages(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: page(
		`<script>console.log("hello", 42); console.warn("careful"); console.error("bad")</script>` +
			`<script>throw new Error("boom")</script>`)})
	require.NoError(t, err)

	res, err := tl.Dev().Console(ctx, inv, tools.ConsoleInput{})
	require.NoError(t, err)
	var texts []string
	for _, m := range res.Messages {
		texts = append(texts, m.Level+":"+m.Text)
	}
	assert.Subset(t, texts, []string{"info:hello 42", "warning:careful", "error:bad"}, "console.* of the page before the call")
	assert.True(t, containsPrefix(texts, "error:Error: boom") || containsPrefix(texts, "error:Uncaught Error: boom"), texts)

	res, err = tl.Dev().Console(ctx, inv, tools.ConsoleInput{Level: "error", Search: "BAD"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1, "filtered by level and text")
	assert.Equal(t, "bad", res.Messages[0].Text)

	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: page(`<script>console.info("fresh")</script>`)})
	require.NoError(t, err)
	res, err = tl.Dev().Console(ctx, inv, tools.ConsoleInput{})
	require.NoError(t, err)
	texts = texts[:0]
	for _, m := range res.Messages {
		texts = append(texts, m.Text)
	}
	assert.Contains(t, texts, "fresh")
	assert.NotContains(t, texts, "bad", "a navigation starts a new list")
}

func containsPrefix(list []string, p string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func networkRequests(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	u := page(`<img src="/pixel?b=x"><script>fetch('/data?b=y')</script>`)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: u})
	require.NoError(t, err)
	_, err = tl.Read().WaitFor(ctx, inv, tools.WaitForInput{Selector: "img"})
	require.NoError(t, err)

	res, err := tl.Dev().Network(ctx, inv, tools.NetworkInput{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Requests)
	assert.Equal(t, u, res.Requests[0].URL, "the document's own load first")
	assert.Equal(t, "document", res.Requests[0].Type)
	assert.Equal(t, 200, res.Requests[0].Status)

	img, err := tl.Dev().Network(ctx, inv, tools.NetworkInput{Type: "img"})
	require.NoError(t, err)
	require.Len(t, img.Requests, 1)
	assert.Contains(t, img.Requests[0].URL, "/pixel")
	assert.Equal(t, 200, img.Requests[0].Status)

	var n int
	evalJSON(t, tl, inv, `() => new Promise(r => { const w = () => performance.getEntriesByName(location.origin + '/data?b=y').length ? r(1) : setTimeout(w, 10); w() })`, &n)
	data, err := tl.Dev().Network(ctx, inv, tools.NetworkInput{URLContains: "/data"})
	require.NoError(t, err)
	require.Len(t, data.Requests, 1)
	assert.Equal(t, "fetch", data.Requests[0].Type)
}

func fillFormAndDrag(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: page(`<form>
		<input id=name value=old><textarea id=bio></textarea>
		<select id=c><option value=r>Red</option><option value=g>Green</option></select>
		<input type=checkbox id=ok><input type=checkbox id=off checked>
		<input type=radio name=s id=s1 checked><input type=radio name=s id=s2>
		<button type=button id=btn>b</button></form>
		<div id=src draggable=true style="width:50px;height:50px;background:red">drag</div>
		<div id=dst style="width:80px;height:80px;background:blue" ondragover="event.preventDefault()"
			ondrop="event.preventDefault(); out.textContent='dropped:' + event.dataTransfer.getData('text/plain')"></div>
		<div id=knob style="width:30px;height:30px;background:green"></div>
		<script>
		src.addEventListener('dragstart', e => e.dataTransfer.setData('text/plain', 'payload'));
		let down = false;
		knob.addEventListener('pointerdown', () => { down = true });
		addEventListener('pointerup', e => { if (down) out.textContent = 'released on ' + document.elementFromPoint(e.clientX, e.clientY).id; down = false });
		</script>`)})
	require.NoError(t, err)

	res, err := tl.Act().FillForm(ctx, inv, tools.FillFormInput{Fields: []tools.FormField{
		{Target: tools.Target{Selector: "#name"}, Value: "Ada"},
		{Target: tools.Target{Selector: "#bio"}, Value: "two\nlines"},
		{Target: tools.Target{Selector: "#c"}, Value: "Green"},
		{Target: tools.Target{Selector: "#ok"}, Value: "true"},
		{Target: tools.Target{Selector: "#off"}, Value: "false"},
		{Target: tools.Target{Selector: "#s2"}},
	}})
	require.NoError(t, err)
	require.Len(t, res.Fields, 6)
	assert.Equal(t, []string{"text", "text", "select", "checkbox", "checkbox", "radio"},
		[]string{res.Fields[0].Kind, res.Fields[1].Kind, res.Fields[2].Kind, res.Fields[3].Kind, res.Fields[4].Kind, res.Fields[5].Kind})
	var got []any
	evalJSON(t, tl, inv, `() => [document.querySelector('#name').value, bio.value, c.value, ok.checked, off.checked, s1.checked, s2.checked]`, &got)
	assert.Equal(t, []any{"Ada", "two\nlines", "g", true, false, false, true}, got)

	_, err = tl.Act().FillForm(ctx, inv, tools.FillFormInput{Fields: []tools.FormField{{Target: tools.Target{Selector: "#btn"}, Value: "x"}}})
	require.ErrorIs(t, err, tools.ErrInvalidInput, "a button is not a form field")

	d, err := tl.Act().Drag(ctx, inv, tools.DragInput{From: tools.Target{Selector: "#src"}, To: tools.Target{Selector: "#dst"}})
	require.NoError(t, err)
	assert.True(t, d.HTML5, "the page started an HTML drag")
	assert.Equal(t, "dropped:payload", outText(t, ctx, tl, inv))

	d, err = tl.Act().Drag(ctx, inv, tools.DragInput{From: tools.Target{Selector: "#knob"}, To: tools.Target{Selector: "#dst"}})
	require.NoError(t, err)
	assert.False(t, d.HTML5, "a pointer drag")
	assert.Equal(t, "released on dst", outText(t, ctx, tl, inv), "pressed on the knob, released over the drop zone")
}

func pdfAndResize(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	u := page(`<h1>print me</h1>`)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: u})
	require.NoError(t, err)

	pdf, err := tl.Dev().PDF(ctx, inv, tools.PDFInput{Landscape: true})
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(pdf.Path) })
	b, err := os.ReadFile(pdf.Path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("%PDF-")), "a PDF file")
	sum := sha256.Sum256(b)
	assert.Equal(t, hex.EncodeToString(sum[:]), pdf.SHA256)
	assert.Equal(t, int64(len(b)), pdf.Size)
	assert.Equal(t, u, pdf.URL)

	vp, err := tl.Dev().Resize(ctx, inv, tools.ViewportInput{Width: 412, Height: 300})
	require.NoError(t, err)
	assert.Equal(t, 412, vp.Width)
	assert.Equal(t, 300, vp.Height)
	var w []int
	evalJSON(t, tl, inv, `() => [innerWidth, innerHeight]`, &w)
	assert.Equal(t, []int{412, 300}, w, "the viewport holds for the conversation's later calls")

	_, err = tl.Dev().Resize(ctx, inv, tools.ViewportInput{})
	require.NoError(t, err)
	evalJSON(t, tl, inv, `() => [innerWidth, innerHeight]`, &w)
	assert.NotEqual(t, []int{412, 300}, w, "0 × 0 restores the window's size")
}

func tabsOfAConversation(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	page := dialogSite(t)
	ctx := stepCtx(t)
	list, err := tl.Tabs().List(ctx, inv, tools.TabsInput{})
	require.NoError(t, err)
	assert.Empty(t, list.Tabs, "nothing is opened to list tabs")

	first, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: page(`<b>first</b><button id=pop onclick="window.open(location.href + '&popup=1')">pop</button>`)})
	require.NoError(t, err)
	if name == "host-bridge" {
		_, err = tl.Tabs().List(ctx, inv, tools.TabsInput{})
		require.ErrorIs(t, err, browserbackend.ErrNotSupported, "a backend with one tab per conversation says so")
		return
	}
	second, err := tl.Tabs().Open(ctx, inv, tools.OpenTabInput{URL: page(`<b>second</b>`)})
	require.NoError(t, err)
	assert.NotEqual(t, first.TabID, second.TabID)
	list, err = tl.Tabs().List(ctx, inv, tools.TabsInput{})
	require.NoError(t, err)
	require.Len(t, list.Tabs, 2, "the first tab stays the conversation's")
	assert.Equal(t, second.TabID, list.Tabs[0].ID)
	assert.True(t, list.Tabs[0].Current)
	assert.Contains(t, list.Tabs[0].URL, "second")
	assert.Equal(t, first.TabID, list.Tabs[1].ID)

	sel, err := tl.Tabs().Select(ctx, inv, tools.SelectTabInput{TabID: first.TabID})
	require.NoError(t, err)
	assert.Equal(t, first.URL, sel.URL)
	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Contains(t, ex.Text, "first", "later calls run in the selected tab")

	click, err := tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#pop"}})
	require.NoError(t, err)
	require.Len(t, click.Opened, 1, "the click reports the popup")
	if name == "extension" {
		// The extension lists no opener: its popups are reported, not adopted.
		cl, err := tl.Tabs().Close(ctx, inv, tools.CloseTabInput{TabID: second.TabID})
		require.NoError(t, err)
		assert.True(t, cl.Released.Closed)
		require.Len(t, cl.Tabs, 1)
		assert.Equal(t, first.TabID, cl.Tabs[0].ID)
		rel, err := tl.Close(ctx, inv, tools.ReleaseInput{})
		require.NoError(t, err)
		assert.Len(t, rel.Tabs, 1)
		return
	}
	list, err = tl.Tabs().List(ctx, inv, tools.TabsInput{})
	require.NoError(t, err)
	require.Len(t, list.Tabs, 3, "the popup is adopted")
	var popup browserbackend.TabInfo
	for _, tb := range list.Tabs {
		if tb.Opener != "" {
			popup = tb
		}
	}
	require.NotEmpty(t, popup.ID)
	assert.Equal(t, first.TabID, popup.Opener)
	_, err = tl.Tabs().Select(ctx, inv, tools.SelectTabInput{TabID: popup.ID})
	require.NoError(t, err)
	var u string
	evalJSON(t, tl, inv, `() => location.href`, &u)
	assert.Contains(t, u, "popup=1", "the popup can be driven")

	cl, err := tl.Tabs().Close(ctx, inv, tools.CloseTabInput{TabID: popup.ID})
	require.NoError(t, err)
	assert.True(t, cl.Released.Closed)
	require.Len(t, cl.Tabs, 2)
	_, err = tl.Tabs().Select(ctx, inv, tools.SelectTabInput{TabID: popup.ID})
	require.ErrorIs(t, err, browserbackend.ErrPolicy, "a closed tab cannot be selected")

	rel, err := tl.Close(ctx, inv, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Len(t, rel.Tabs, 2, "closing the conversation closes every tab it holds")
}

func downloadsAreReported(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	payload := bytes.Repeat([]byte("browserchain\x00"), 4000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/file.bin" {
			w.Header().Set("Content-Disposition", `attachment; filename="../report 1.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(payload)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<title>dl</title><a id=dl href="/file.bin">get</a>`)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	dtl := tools.New(tools.Options{Selector: tl.Selector(), DownloadDir: dir, Logger: quietLogger()})
	ctx := stepCtx(t)
	_, err := dtl.Navigate(ctx, inv, tools.NavigateInput{URL: srv.URL})
	require.NoError(t, err)
	res, err := dtl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#dl"}})
	require.NoError(t, err)
	assert.Nil(t, res.Navigated, "a download is no navigation")
	switch name {
	case "local":
		require.Len(t, res.Downloads, 1)
		d := res.Downloads[0]
		assert.Equal(t, "completed", d.State)
		assert.True(t, strings.HasPrefix(d.Path, dir), "saved under the download directory: %s", d.Path)
		assert.True(t, strings.HasSuffix(d.Path, "report_1.bin"), "under its suggested name, made safe: %s", d.Path)
		assert.Equal(t, dir, filepath.Dir(filepath.Dir(d.Path)), "in the conversation's directory, never outside")
		b, err := os.ReadFile(d.Path)
		require.NoError(t, err)
		assert.Equal(t, payload, b)
		sum := sha256.Sum256(payload)
		assert.Equal(t, hex.EncodeToString(sum[:]), d.SHA256)
		assert.Equal(t, int64(len(payload)), d.Size)
		assert.Equal(t, "application/octet-stream", d.MediaType)
	case "cdp-inspect", "host-bridge":
		require.Len(t, res.Downloads, 1, "the user's browser's download is reported")
		assert.Empty(t, res.Downloads[0].Path)
		assert.NotEmpty(t, res.Downloads[0].NotSaved, "and the agent is told it cannot have the file")
	default:
		assert.Empty(t, res.Downloads, "a backend that does not report downloads")
	}
	ex, err := dtl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, "get", ex.Text, "the page is as it was")
}
