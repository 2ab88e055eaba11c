package cdpinspect_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
)

// Seeds live in testdata/fuzz/<FuzzName>/; these are added as well so a
// plain `go test` covers the main shapes.

func FuzzParseDevToolsActivePort(f *testing.F) {
	f.Add([]byte("9222\n/devtools/browser/283b6bad-d245-4f72-aafa-19aad2493eec\n"))
	f.Add([]byte("9222\r\n/devtools/browser/x"))
	f.Add([]byte("0\n/devtools/browser/x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		port, path, err := cdpinspect.ParseDevToolsActivePort(data)
		if err != nil {
			return
		}
		if port < 1 || port > 65535 {
			t.Fatalf("accepted port %d", port)
		}
		if !strings.HasPrefix(path, "/devtools/browser/") || len(path) == len("/devtools/browser/") {
			t.Fatalf("accepted path %q", path)
		}
		// The URL Discover builds from it must parse back to the same path.
		u, perr := url.Parse("ws://127.0.0.1:1" + path)
		if perr != nil || u.Path != path || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("path %q does not round-trip as a URL path: %v", path, perr)
		}
	})
}

func FuzzDecodeVersion(f *testing.F) {
	f.Add([]byte(`{"Browser":"Chrome/156.0.8078.108","Protocol-Version":"1.3","webSocketDebuggerUrl":"ws://localhost:9222/devtools/browser/abc"}`))
	f.Add([]byte(`{"Browser":"node.js/v20.11.0","Protocol-Version":"1.1"}`))
	f.Add([]byte(`<html>404</html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ws, err := cdpinspect.DecodeVersion(body)
		if err != nil {
			var e *bb.Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *browserbackend.Error", err)
			}
			switch e.Code {
			case bb.CodeInvalidResponse, bb.CodeNonChrome:
			default:
				t.Fatalf("unexpected code %q", e.Code)
			}
			if e.Class != bb.ClassTransport || e.Detail != e.Code {
				t.Fatalf("bad error shape %+v", e)
			}
			return
		}
		u, perr := url.Parse(ws)
		if perr != nil || u.Scheme != "ws" || u.Host == "" || !strings.HasPrefix(u.Path, "/devtools/browser/") {
			t.Fatalf("accepted %q", ws)
		}
	})
}
