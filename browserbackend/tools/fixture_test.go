package tools_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// Fixture-site constants the scenario asserts on.
const (
	fixtureItems    = 260 // /item/N links on the form and done pages
	fixtureDocs     = 3   // links whose text or URL contains "docs"
	fixtureTitle    = "Fixture form"
	innerFrameText  = "Same-origin frame text"
	crossFrameText  = "Cross-origin frame text"
	largeParagraphs = 4000
)

// site is the fixture web site of the tool tests: two loopback servers (the
// second one is the cross-origin iframe's origin).
type site struct {
	main, other *httptest.Server
	// done is closed at cleanup so a slow page's handler returns.
	done chan struct{}
	// gate is closed by a test to let /gate answer.
	gate chan struct{}
}

func (s *site) url(path string) string { return s.main.URL + path }

func linkList(b *strings.Builder) {
	b.WriteString(`<nav id="links">`)
	for i := 1; i <= fixtureItems; i++ {
		fmt.Fprintf(b, `<a href="/item/%d">Item %d</a> `, i, i)
	}
	b.WriteString(`<a href="/docs/intro">Read the docs</a> <a href="/docs/api">API reference</a> <a href="/guide">More docs</a></nav>`)
}

// startSite serves:
//
//	/start        302 → /hop → 302 /form (a redirect chain)
//	/form         a form (text field, select, submit button), 263 links, a
//	              same-origin iframe (/frame) and a cross-origin one (other/xframe)
//	/submit       the form's target: 303 → /done?…
//	/done         "Thanks, <q>!" and the same links
//	/slow         a page whose response never ends before the test does
//	/heldimg      a page whose one <img> (/held.png) never arrives
//	/large        a long page (4000 paragraphs)
//	/widgets      hover target, text field, removable node, an element added
//	              when /gate answers, a link, a tall page with a scroll handler
//	/gate         answers once the test closes site.gate
//	/item/N, /docs/…  small pages
func startSite(t testing.TB) *site {
	t.Helper()
	s := &site{done: make(chan struct{}), gate: make(chan struct{})}

	other := http.NewServeMux()
	other.HandleFunc("/xframe", func(w http.ResponseWriter, r *http.Request) {
		page(w, "cross frame", `<p>`+crossFrameText+`</p><button>Cross button</button>`)
	})
	s.other = chromiumtest.LoopbackServer(t, other)

	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hop", http.StatusFound)
	})
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/form", http.StatusFound)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`<h1>Contact</h1>
<form action="/submit" method="get">
  <label for="q">Query</label> <input id="q" name="q" type="text">
  <label for="color">Colour</label>
  <select id="color" name="color"><option value="red">Red</option><option value="green">Green</option></select>
  <button id="send" type="submit">Send</button>
</form>
<iframe id="inner" src="/frame" width="300" height="80"></iframe>
<iframe id="cross" src="` + s.other.URL + `/xframe" width="300" height="80"></iframe>
`)
		linkList(&b)
		page(w, fixtureTitle, b.String())
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		page(w, "inner frame", `<p>`+innerFrameText+`</p>`)
	})
	mux.HandleFunc("/submit", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/done?"+r.URL.RawQuery, http.StatusSeeOther)
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, `<h1 id="thanks">Thanks, %s!</h1><p id="colour">colour=%s</p>`,
			html.EscapeString(r.URL.Query().Get("q")), html.EscapeString(r.URL.Query().Get("color")))
		linkList(&b)
		page(w, "Done", b.String())
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	})
	mux.HandleFunc("/heldimg", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Held image", `<p id="before">text before the image</p><img src="/held.png" alt="held">`)
	})
	mux.HandleFunc("/held.png", func(w http.ResponseWriter, r *http.Request) {
		select { // an image the server never sends: the load event never fires
		case <-r.Context().Done():
		case <-s.done:
		}
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for i := 0; i < largeParagraphs; i++ {
			fmt.Fprintf(&b, "<p>Paragraph %d of a long page, with some words to read.</p>\n", i)
		}
		page(w, "Large", b.String())
	})
	mux.HandleFunc("/widgets", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Widgets", `<div id="hover" onmouseover="this.textContent='hovered'">hover me</div>
<input id="k" type="text">
<button id="remove" onclick="document.getElementById('doomed').remove()">Remove</button>
<p id="doomed">doomed</p>
<button id="later" onclick="fetch('/gate').then(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'arrived late'; document.body.append(p); })">Later</button>
<a id="go" href="/item/7">Seven</a>
<div style="height:3000px"></div>
<p id="bottom">bottom</p>
<script>addEventListener('scroll', () => { document.getElementById('hover').dataset.scrolled = '1'; document.title = 'scrolled'; }, {once: true});</script>`)
	})
	mux.HandleFunc("/gate", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.gate:
		case <-s.done:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		page(w, r.URL.Path, `<p>`+html.EscapeString(r.URL.Path)+`</p>`)
	})
	s.main = chromiumtest.LoopbackServer(t, mux)
	// Registered after the servers, so it runs before their Close: a slow
	// handler must return for Close to finish.
	t.Cleanup(func() { close(s.done) })
	return s
}

func page(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>",
		html.EscapeString(title), body)
}
