package mcptools_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// site is the fixture web site of the MCP tests.
type site struct {
	*httptest.Server
	// slowHit receives once per request of /slow, which answers only when
	// the request or the test ends.
	slowHit chan struct{}
}

// startSite serves /form (a text field and a submit button), /done?q=…
// ("Thanks, q!" and three links), /slow and any other path as a small page
// titled by its path.
func startSite(t *testing.T) *site {
	s := &site{slowHit: make(chan struct{}, 8)}
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Contact", `<h1>Contact</h1><form action="/done" method="get">
<label for="q">Query</label> <input id="q" name="q" type="text">
<button id="send" type="submit">Send</button></form>`)
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Done", fmt.Sprintf(`<h1 id="thanks">Thanks, %s!</h1>
<a href="/docs/intro">Read the docs</a> <a href="/docs/api">API reference</a> <a href="/about">About</a>`,
			html.EscapeString(r.URL.Query().Get("q"))))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.slowHit <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		page(w, r.URL.Path, `<p>`+html.EscapeString(r.URL.Path)+`</p>`)
	})
	s.Server = chromiumtest.LoopbackServer(t, mux)
	t.Cleanup(func() { close(done) }) // runs before the server's Close
	return s
}

func page(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>",
		html.EscapeString(title), body)
}

// localTools returns Tools whose only provider is local (Playwright), with
// Close wired to the browser's per-conversation page.
func localTools(t *testing.T) (*tools.Tools, *local.Browser) {
	log := browserbackendtest.DiscardLogger()
	b := local.New(local.Options{Logger: log})
	t.Cleanup(func() { _ = b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: log})
	return tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: log}), b
}
