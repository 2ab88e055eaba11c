package chromiumtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FixturePages is a small set of pages for browser tests, served by
// FixtureServer at the given paths.
var FixturePages = map[string]string{
	"/":      `<!doctype html><html><head><title>browserchain fixture</title></head><body><h1 id="h">Hello, fixture</h1><a href="/noise">noise</a></body></html>`,
	"/noise": noisePage,
}

// noisePage fills a full-window canvas with deterministic pseudo-random
// pixels, so a PNG screenshot of it is large (several MB at 1280×800) and
// cannot be compressed away. window.noiseReady is true once drawn.
const noisePage = `<!doctype html><html><head><title>noise</title>
<style>html,body{margin:0;padding:0;overflow:hidden}canvas{display:block}</style></head>
<body><canvas id="c"></canvas><script>
const c = document.getElementById('c');
c.width = innerWidth; c.height = innerHeight;
const ctx = c.getContext('2d');
const img = ctx.createImageData(c.width, c.height);
let s = 0x2545F491;
for (let i = 0; i < img.data.length; i += 4) {
  s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
  img.data[i] = s & 255; img.data[i+1] = (s >>> 8) & 255; img.data[i+2] = (s >>> 16) & 255; img.data[i+3] = 255;
}
ctx.putImageData(img, 0, 0);
window.noiseReady = true;
</script></body></html>`

// FixtureServer starts an httptest server on 127.0.0.1 (never another
// address) serving pages (path → HTML; nil means FixturePages), closed by
// t.Cleanup. Unknown paths answer 404.
func FixtureServer(t testing.TB, pages map[string]string) *httptest.Server {
	t.Helper()
	if pages == nil {
		pages = FixturePages
	}
	mux := http.NewServeMux()
	for path, body := range pages {
		body := body
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		})
	}
	return LoopbackServer(t, mux)
}

// LoopbackServer starts h on a fresh 127.0.0.1 port, closed by t.Cleanup.
func LoopbackServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("chromiumtest: listen: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
