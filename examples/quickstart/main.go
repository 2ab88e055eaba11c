// Command quickstart runs browserchain's auto chain once, end to end.
//
//	go run ./examples/quickstart [--url URL] [--mode MODE] [--json]
//
// It serves a small fixture page on 127.0.0.1 (unless --url is given), builds
// a selector with the reference providers in order — extension and
// host-bridge over an in-process event hub, cdp-inspect, local — and sends
// one invocation through it: enable the Page domain, navigate, wait for
// Page.loadEventFired (a CDP event, not polling), read the title and capture a
// PNG screenshot to a file. On a fresh machine nothing but local is
// reachable, so the chain falls through to local: no extension is connected,
// and the desktop-auto cdp-inspect candidate of the macos turn finds no
// Chrome on localhost:9222.
//
// It prints the backend used, the attempt sequence, the page title and the
// screenshot's path, sha256 and size; --json prints the same as one JSON
// object. The exit status is 1 when the chain fails, with the selector's
// report (attempts and remediation) on stderr.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	refserver "github.com/browserchain/browserchain/examples/server/runtime"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/local"
)

// Result is what the quickstart reports (also its --json shape).
type Result struct {
	Backend    browserbackend.Kind      `json:"backend,omitempty"`
	Attempts   []browserbackend.Attempt `json:"attempts"`
	URL        string                   `json:"url"`
	Title      string                   `json:"title,omitempty"`
	Screenshot *Screenshot              `json:"screenshot,omitempty"`
	ElapsedMs  int64                    `json:"elapsedMs"`
	// Error and Report are set when the run failed (Report: the selector's
	// failure report, with attempts and remediation, when selection failed).
	Error  string `json:"error,omitempty"`
	Report string `json:"report,omitempty"`
}

// Screenshot describes the written PNG.
type Screenshot struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	Width  int64  `json:"width"`
	Height int64  `json:"height"`
}

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the quickstart with args and returns the exit code: 0 on success,
// 1 when the run failed, 2 for bad flags.
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		url      = fs.String("url", "", "page to open (default: a fixture page served on 127.0.0.1)")
		mode     = fs.String("mode", "auto", "browser_mode: auto, extension, cdp-inspect (cdp-debugger), local (playwright)")
		asJSON   = fs.Bool("json", false, "print the result as one JSON object")
		out      = fs.String("out", filepath.Join(os.TempDir(), "browserchain-quickstart.png"), "screenshot file")
		iface    = fs.String("interface", wire.InterfaceMacOS, "the turn's interface id (macos enables desktop-auto cdp-inspect)")
		verbose  = fs.Bool("v", false, "log every selection record (default: warnings only)")
		deadline = fs.Duration("timeout", 2*time.Minute, "overall deadline")
		guardFl  = refserver.AddGuardFlags(fs) // -allowed-domains, -allow-writes
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	pol := guardFl.Policy() // set but empty is an explicit empty list: refused by guard.New

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	res, err := run(ctx, logger, *url, *mode, *iface, *out, pol)
	if err != nil {
		if res == nil {
			res = &Result{}
		}
		res.Error = err.Error()
		var se *browserbackend.SelectionError
		if errors.As(err, &se) {
			res.Report = se.Report()
			fmt.Fprint(stderr, res.Report)
		}
		fmt.Fprintln(stderr, "quickstart:", err)
		if *asJSON {
			_ = json.NewEncoder(stdout).Encode(res)
		}
		if errors.Is(err, browserbackend.ErrPolicy) {
			return 2 // an invalid --mode is a usage error
		}
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return 0
	}
	printText(stdout, res)
	return 0
}

// run opens url (or the fixture) and screenshots it. pol, when set, puts the
// run under a browser policy: the URL is checked before any
// browser starts and the local Chromium goes through the egress proxy.
func run(ctx context.Context, logger *slog.Logger, url, modeArg, iface, out string, pol *guard.Policy) (*Result, error) {
	start := time.Now()
	if url == "" {
		srv, err := serveFixture()
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		url = "http://" + srv.Addr + "/"
		if pol != nil {
			pol.DevLoopback = append(pol.DevLoopback, srv.Addr) // the fixture lives on loopback
		}
	}
	var localArgs []string
	if pol != nil {
		pol.Logger = logger
		g, err := guard.New(*pol)
		if err != nil {
			return nil, err
		}
		if err := g.CheckURL(ctx, url); err != nil {
			return nil, err
		}
		egress, err := guard.NewEgressProxy(g, guard.EgressOptions{})
		if err != nil {
			return nil, err
		}
		defer egress.Close()
		localArgs = egress.ChromiumArgs()
	}

	// The reference chain: extension / host-bridge over a hub (empty
	// here: no client is paired), cdp-inspect, local.
	hub := eventhub.New()
	defer hub.Close()
	proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: logger})
	defer proxy.Close()
	browser := local.New(local.Options{Logger: logger, Args: localArgs})
	defer browser.Close()
	inspect := cdpinspect.NewProvider(cdpinspect.DefaultConfig(), cdpinspect.WithLogger(logger))
	defer inspect.Close() // its shared browser WebSocket
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{
			proxy.ExtensionProvider(hostproxy.ProviderOptions{}),
			proxy.HostBridgeProvider(hostproxy.ProviderOptions{}),
			inspect,
			local.NewProvider(browser),
		},
		Logger: logger,
	})
	mode, err := sel.ParseMode(modeArg) // the modes the providers declare
	if err != nil {
		return nil, err
	}
	client := sel.Client(browserbackend.Invocation{
		ConversationID:   "quickstart",
		InterfaceID:      iface,
		ActorPrincipalID: "quickstart-user",
		Mode:             mode,
	})
	defer client.Close()
	res := &Result{URL: url}
	defer func() {
		res.Backend, res.Attempts = client.Kind(), client.Attempts()
		res.ElapsedMs = time.Since(start).Milliseconds()
	}()

	// The first command selects the backend.
	if _, err := cdp.Call(ctx, client, page.Enable, page.EnableParams{}); err != nil {
		return res, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loads := cdp.Events(loadCtx, client, page.LoadEventFired) // subscribe before navigating
	nav, err := cdp.Call(ctx, client, page.Navigate, page.NavigateParams{URL: url})
	if err != nil {
		return res, err
	}
	if nav.ErrorText != "" {
		return res, fmt.Errorf("navigate %s: %s", url, nav.ErrorText)
	}
	for _, err := range loads {
		if err != nil {
			return res, fmt.Errorf("waiting for Page.loadEventFired: %w", err)
		}
		break
	}
	stopLoad()

	title, err := cdp.Call(ctx, client, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.title", ReturnByValue: new(true)})
	if err != nil {
		return res, err
	}
	if title.Result != nil {
		_ = json.Unmarshal(title.Result.Value, &res.Title)
	}
	var ss Screenshot
	metrics, err := cdp.Call(ctx, client, page.GetLayoutMetrics, cdp.Empty{})
	if err == nil && metrics.CSSVisualViewport != nil {
		ss.Width = int64(metrics.CSSVisualViewport.ClientWidth)
		ss.Height = int64(metrics.CSSVisualViewport.ClientHeight)
	}
	shot, err := cdp.Call(ctx, client, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(out, shot.Data, 0o644); err != nil {
		return res, fmt.Errorf("write screenshot: %w", err)
	}
	sum := sha256.Sum256(shot.Data)
	abs, _ := filepath.Abs(out)
	ss.Path, ss.SHA256, ss.Bytes = abs, hex.EncodeToString(sum[:]), len(shot.Data)
	res.Screenshot = &ss
	return res, nil
}

func printText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "backend:    %s\n", r.Backend)
	fmt.Fprintf(w, "attempts:   %s\n", strings.Join(browserbackend.AttemptSummary(r.Attempts), " -> "))
	for i, a := range r.Attempts {
		line := fmt.Sprintf("  %d. %-11s %-19s", i+1, a.Kind, a.Stage)
		if a.Code != "" {
			line += " [" + a.Code + "]"
		}
		if a.Reason != "" {
			line += " reason: " + a.Reason
		}
		if a.Message != "" && a.Message != a.Reason {
			line += " — " + a.Message
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "url:        %s\n", r.URL)
	fmt.Fprintf(w, "title:      %s\n", r.Title)
	fmt.Fprintf(w, "screenshot: %s\n", r.Screenshot.Path)
	fmt.Fprintf(w, "sha256:     %s\n", r.Screenshot.SHA256)
	fmt.Fprintf(w, "bytes:      %d (%dx%d CSS px viewport)\n", r.Screenshot.Bytes, r.Screenshot.Width, r.Screenshot.Height)
	fmt.Fprintf(w, "elapsed:    %d ms\n", r.ElapsedMs)
}

// fixtureServer is the page served when --url is not given.
type fixtureServer struct {
	Addr string
	srv  *http.Server
}

func (f *fixtureServer) Close() { _ = f.srv.Close() }

// serveFixture serves the fixture page on 127.0.0.1 (loopback only).
func serveFixture() (*fixtureServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, fixtureHTML)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &fixtureServer{Addr: ln.Addr().String(), srv: srv}, nil
}

const fixtureHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>browserchain quickstart</title>
<style>
 body{margin:0;font:18px/1.4 sans-serif;background:linear-gradient(135deg,#0f4c81,#3aa17e);color:#fff;min-height:100vh}
 main{padding:48px}
 h1{font-size:44px;margin:0 0 12px}
 ol li{margin:6px 0}
 .k{display:inline-block;padding:2px 10px;border-radius:6px;background:rgba(255,255,255,.18)}
</style></head>
<body><main>
<h1>browserchain quickstart</h1>
<p>This page was served on 127.0.0.1 and opened through the auto chain:</p>
<ol><li><span class="k">extension</span> / <span class="k">host-bridge</span> — over the event hub</li>
<li><span class="k">cdp-inspect</span> — a Chrome with a remote-debugging port</li>
<li><span class="k">local</span> — a Chromium launched through Playwright</li></ol>
</main></body></html>
`
