// Command mcp serves the browser tools to any Model Context Protocol client:
// over stdio by default, over streamable HTTP with -http.
// It embeds the reference server (examples/server/runtime) so the paired
// Chrome extension and the desktop bridge can connect, and chains them with
// cdp-inspect and the local Playwright backend, as examples/server does.
//
//	go run ./examples/mcp                         # stdio: what MCP clients launch
//	go run ./examples/mcp -http 127.0.0.1:8931    # streamable HTTP at http://127.0.0.1:8931/mcp
//
// Flags:
//
//	-http             serve streamable HTTP on this loopback address instead of stdio
//	-session-timeout  close an HTTP session idle this long, and its pages (default 10m)
//	-listen           address of the embedded reference server (extension, bridge); "" disables it
//	                  (default 127.0.0.1:7830, where the Vellum extension looks for a
//	                  self-hosted gateway; when taken, the server runs without it and says so)
//	-key-file         HS256 signing key of the reference server (default as examples/server)
//	-allowed-origins  chrome-extension:// origins allowed to pair (default: the published Vellum
//	                  extension ids and the reference extension, as examples/server)
//	-actor            actor principal id of paired clients and of every tool call (default local-user)
//	-mode             browser_mode of a call that sends none: auto, extension, cdp-inspect, local (default auto)
//	-cdp-inspect      add cdp-inspect to every auto call (default false)
//	-cdp-port         DevTools port cdp-inspect probes (default 9222)
//	-local            add the local Playwright backend as the last resort (default true)
//	-chromium         browser executable of the local backend
//	-screenshots      image (inline PNG, default) or link (a resource link read with resources/read)
//	-screenshot-dir   where screenshots are written (default: $TMPDIR/browserchain-screenshots)
//	-allowed-domains  comma-separated allow-list of page hosts (app.example.com, *.example.com; "*": the
//	                  open web, still no private addresses); not given: no policy (as examples/server)
//	-allow-writes     with -allowed-domains: allow write-looking clicks, key presses and types
//	-vault            JSON file of browser_login credentials, {"name": {"username": …, "password": …}},
//	                  readable by its owner only (mode 0600); not given: browser_login is not configured
//	-trace-dir        record every tool call (browser_trace shows a conversation's record) and write
//	                  each conversation's trace, <id>.jsonl and <id>.html, into this directory when its
//	                  session ends; not given: nothing is recorded
//	-v                debug logging
//
// Logs go to stderr (stdout is the stdio transport), and to the client
// through MCP logging once it sets a level. On exit (stdin closed, SIGINT,
// SIGTERM) every session's pages are closed and the local Chromium is shut
// down; SIGINT and SIGTERM first cancel the tool calls in flight, so the
// process never waits for a call's deadline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/local"
)

// MCPPath is where -http serves the streamable HTTP endpoint.
const MCPPath = "/mcp"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

type config struct {
	httpAddr, listen, keyFile, origins, actor, mode, chromium, screenshots, shotDir, uploadDir, downloadDir string
	sessionTimeout                                                                                          time.Duration
	inspect, useLocal, verbose                                                                              bool
	cdpPort                                                                                                 int
	guard                                                                                                   *guard.Policy
	vault                                                                                                   string
	traceDir                                                                                                string
	// Managed sessions: the SQLite file of session records and saved
	// logins, the key file that seals them, isolation, and the agent that
	// grants name.
	sessionsDB, sessionsKeyFile, agentID, roles string
	isolated                                    bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.httpAddr, "http", "", "serve streamable HTTP on this loopback address instead of stdio")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Minute, "close an idle HTTP session, and its pages, after this long")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7830", `address of the embedded reference server for the extension and bridge ("" disables it)`)
	fs.StringVar(&c.keyFile, "key-file", runtime.DefaultKeyFile(), "HS256 signing key file of the reference server (created with mode 0600)")
	fs.StringVar(&c.origins, "allowed-origins", strings.Join(append(runtime.VellumExtensionOrigins(), extension.Origin), ","),
		"comma-separated chrome-extension:// origins allowed to pair")
	fs.StringVar(&c.actor, "actor", auth.DefaultActor, "actor principal id of paired clients and of every tool call")
	fs.StringVar(&c.mode, "mode", string(browserbackend.ModeAuto), "browser_mode of a call that sends none: auto, extension, cdp-inspect, local")
	fs.BoolVar(&c.inspect, "cdp-inspect", false, "add cdp-inspect to every auto call")
	fs.IntVar(&c.cdpPort, "cdp-port", 9222, "DevTools port for cdp-inspect")
	fs.BoolVar(&c.useLocal, "local", true, "add the local Playwright backend as last resort")
	fs.StringVar(&c.chromium, "chromium", "", "browser executable for the local backend (default: $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium)")
	fs.StringVar(&c.screenshots, "screenshots", "image", "screenshot delivery: image (inline PNG) or link (resource link)")
	fs.StringVar(&c.shotDir, "screenshot-dir", "", "directory screenshots are written to (default: $TMPDIR/browserchain-screenshots)")
	fs.StringVar(&c.uploadDir, "upload-dir", "", "directory browser_file_upload may read files from (\"\": uploads off)")
	fs.StringVar(&c.downloadDir, "download-dir", "", "directory where downloads in the private Chromium are saved, one directory per conversation (\"\": that browser refuses downloads)")
	fs.StringVar(&c.vault, "vault", "", "JSON file of browser_login credentials (mode 0600): {\"name\": {\"username\": …, \"password\": …}}")
	fs.StringVar(&c.traceDir, "trace-dir", "", "record every tool call and write each conversation's trace (.jsonl and .html) into this directory when its session ends (\"\": no recording)")
	fs.StringVar(&c.sessionsDB, "sessions-db", "", "SQLite file (mode 0600) of managed-session records and saved logins (browser_save_context, context_name); \"\": none")
	fs.StringVar(&c.sessionsKeyFile, "sessions-key-file", "", "key file (32 bytes, created with mode 0600) that seals the saved logins in -sessions-db; \"\": stored unsealed")
	fs.BoolVar(&c.isolated, "isolated", false, "give each conversation a browser context of its own (cookies and storage) on local and cdp-inspect; saved logins need it")
	fs.StringVar(&c.agentID, "agent-id", "", "agent id of every tool call, matched by saved-login grants")
	fs.StringVar(&c.roles, "roles", "", "comma-separated roles of every tool call, matched by saved-login grants")
	fs.BoolVar(&c.verbose, "v", false, "debug logging")
	guardFlags := runtime.AddGuardFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.guard = guardFlags.Policy()
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.screenshots != "image" && c.screenshots != "link" {
		return c, fmt.Errorf("-screenshots %q: want image or link", c.screenshots)
	}
	for _, a := range []struct{ flag, addr string }{{"-http", c.httpAddr}, {"-listen", c.listen}} {
		if a.addr != "" {
			if err := checkLoopback(a.addr); err != nil {
				return c, fmt.Errorf("%s: %w", a.flag, err)
			}
		}
	}
	return c, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q is not a loopback address: the browser tools are served on loopback only", addr)
	}
	return nil
}

// run serves until stdin ends (stdio), ctx is cancelled, or serving fails,
// then releases everything it started.
func run(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	key, err := auth.LoadOrCreateKey(c.keyFile)
	if err != nil {
		return err
	}
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = c.inspect
	cfg.Port = c.cdpPort
	if err := cfg.Validate(); err != nil {
		return err
	}
	var vault tools.Vault
	if c.vault != "" {
		if vault, err = loadVault(c.vault); err != nil {
			return err
		}
	}
	g, localArgs, stopGuard, err := runtime.StartGuard(c.guard, log) // the local Chromium reaches no private address
	if err != nil {
		return err
	}
	defer stopGuard() // after the local browser has closed
	var store *sessions.Store
	if c.sessionsDB != "" {
		var skey []byte
		if c.sessionsKeyFile != "" {
			if skey, err = auth.LoadOrCreateKey(c.sessionsKeyFile); err != nil {
				return err
			}
		}
		if store, err = sessions.Open(c.sessionsDB, sessions.Options{Key: skey}); err != nil {
			return fmt.Errorf("-sessions-db: %w", err)
		}
		defer store.Close()
	}
	insp := cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log), cdpinspect.WithIsolatedContexts(c.isolated))
	defer insp.Close() // its shared browser WebSocket, after the runtime
	fallbacks := []browserbackend.Provider{insp}
	var lb *local.Browser
	if c.useLocal {
		lb = local.New(local.Options{ExecutablePath: c.chromium, Logger: log, Args: localArgs, Isolated: c.isolated})
		defer lb.Close() // no Chromium or driver outlives the server
		fallbacks = append(fallbacks, local.NewProvider(lb))
	}
	rt, err := runtime.New(runtime.Config{Key: key, AllowedOrigins: runtime.SplitList(c.origins), ActorPrincipalID: c.actor,
		Logger: log, Fallbacks: fallbacks, Guard: g})
	if err != nil {
		return err
	}
	defer rt.Close()
	mode, err := rt.Selector.ParseMode(c.mode) // the modes the chain's providers declare
	if err != nil {
		return fmt.Errorf("-mode: %w", err)
	}
	if c.listen != "" {
		stopRef, err := serveReference(ctx, rt, c.listen, log)
		if err != nil {
			log.Warn("reference server not started: the extension and bridge cannot connect to this process",
				"module", "example-mcp", "addr", c.listen, "error", err)
		} else {
			defer stopRef()
		}
	}

	// Each MCP session's conversation keeps its Client between calls: no
	// new connection or target attachment per tool call.
	// Closing a conversation closes what it opened on every provider.
	rec := traceRecorder(c.traceDir)
	tl := tools.New(tools.Options{Selector: rt.Selector, ScreenshotDir: c.shotDir, UploadDir: c.uploadDir, DownloadDir: c.downloadDir, Logger: log, Guard: g,
		Vault: vault, KeepClients: true, Recorder: rec, Sessions: store})
	defer tl.Shutdown() // after srv.Close below has closed the sessions' pages
	mo := mcptools.Options{Tools: tl, ActorPrincipalID: c.actor, DefaultMode: mode, Logger: log,
		AgentID: c.agentID, Roles: runtime.SplitList(c.roles)}
	if rec != nil {
		mo.OnSessionEnd = func(conv string) { writeTrace(rec, c.traceDir, conv, log) }
		defer func() { // the conversations calls named, after srv.Close
			for _, conv := range rec.Conversations() {
				writeTrace(rec, c.traceDir, conv, log)
			}
		}()
	}
	if c.screenshots == "link" {
		mo.Screenshots = mcptools.ScreenshotResourceLink
	}
	srv := mcptools.New(mo)
	defer srv.Close() // ends the sessions and closes their pages, before the browser closes
	ms := srv.NewMCPServer(&mcp.Implementation{Name: "browserchain", Title: "browserchain browser tools", Version: "dev"})

	if c.httpAddr == "" {
		log.Info("serving MCP over stdio", "module", "example-mcp")
		// On a signal Run closes the session, which waits for the calls in
		// flight: Close cancels them, so the wait is not their deadline.
		stopClosing := context.AfterFunc(ctx, func() { _ = srv.Close() })
		defer stopClosing()
		err := ms.Run(ctx, mcptools.StdioTransport(stdin, stdout, log))
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	}
	return serveHTTP(ctx, ms, c, log, srv.Close)
}

// serveReference starts the embedded reference server on addr; ctx
// ending cancels its requests in flight (a browser command among them).
func serveReference(ctx context.Context, rt *runtime.Runtime, addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := rt.HTTPServer(addr)
	hs.BaseContext = func(net.Listener) context.Context { return ctx }
	go func() { _ = hs.Serve(ln) }()
	log.Info("reference server listening", "module", "example-mcp", "addr", ln.Addr().String())
	return func() {
		rt.Close() // ends the SSE streams so Shutdown does not wait for them
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}, nil
}

// serveHTTP serves the streamable HTTP transport at MCPPath until ctx ends;
// endSessions cancels the calls in flight and ends the MCP sessions (and
// their event streams) before the HTTP server shuts down.
func serveHTTP(ctx context.Context, ms *mcp.Server, c config, log *slog.Logger, endSessions func() error) error {
	// Resumable streams: event ids, a priming event, retry, replay on
	// Last-Event-ID.
	h := mcptools.StreamableHTTPHandler(ms, &mcp.StreamableHTTPOptions{SessionTimeout: c.sessionTimeout, Logger: log})
	mux := http.NewServeMux()
	// The SDK refuses a non-loopback Host on a loopback listener (DNS
	// rebinding); cross-origin protection refuses a web page's requests.
	mux.Handle(MCPPath, http.NewCrossOriginProtection().Handler(h))
	ln, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		return err
	}
	// The reference server's timeouts: a client that trickles its headers
	// or body, or parks an idle connection, is cut off. The session's GET
	// stream is not: net/http lifts the read deadline once a request has
	// been read.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: runtime.DefaultReadHeaderTimeout,
		ReadTimeout: runtime.DefaultReadTimeout, IdleTimeout: runtime.DefaultIdleTimeout}
	log.Info("serving MCP over streamable HTTP", "module", "example-mcp", "url", "http://"+ln.Addr().String()+MCPPath)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	_ = endSessions()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// traceRecorder is the recorder of -trace-dir, nil without it.
func traceRecorder(dir string) *recorder.Recorder {
	if dir == "" {
		return nil
	}
	return recorder.New(recorder.Options{})
}

// writeTrace writes conversation conv's trace into dir and forgets it.
func writeTrace(rec *recorder.Recorder, dir, conv string, log *slog.Logger) {
	if err := rec.WriteFiles(dir, conv); err != nil {
		log.Warn("writing the trace failed", "module", "example-mcp", "conversationId", conv, "error", err)
		return
	}
	rec.Forget(conv)
	log.Info("trace written", "module", "example-mcp", "conversationId", conv,
		"file", filepath.Join(dir, recorder.FileStem(conv)+".html"))
}
