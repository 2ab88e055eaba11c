// Command bridge is the reference desktop bridge: it connects
// the Chrome on this machine to an assistant runtime's event hub, so the
// runtime's host-bridge backend can drive it.
//
//	go run ./examples/server &                       # the runtime, on 127.0.0.1:7830
//	chromium --remote-debugging-port=9222 &          # a Chrome with DevTools on
//	go run ./examples/bridge -server http://127.0.0.1:7830 -token "$TOKEN"
//
// Run with -help for every flag. The token may also come from the
// BROWSERCHAIN_TOKEN environment variable, which keeps it out of the process
// list; it is never logged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/bridge"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bridge:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7830", "assistant runtime base URL (serves /v1/events and the host-browser routes)")
	token := fs.String("token", "", "bearer token from pairing, sent as Authorization: Bearer (default $BROWSERCHAIN_TOKEN)")
	iface := fs.String("interface", bridge.DefaultInterfaceID, "interface id sent as X-Vellum-Interface-Id (macos or windows grant host_browser)")
	clientID := fs.String("client-id", "", "client id sent as X-Vellum-Client-Id (default: random bridge-<hex>)")
	devtools := fs.String("devtools", "localhost:9222", "DevTools host:port of the local Chrome (host must be loopback)")
	userDataDir := fs.String("user-data-dir", "", "Chrome user-data directory whose DevToolsActivePort file names the endpoint, tried before -devtools (default: the known Chrome/Chromium profile directories)")
	wsURL := fs.String("ws-url", "", "explicit browser WebSocket URL (ws://127.0.0.1:<port>/devtools/browser/<id>); overrides discovery")
	probe := fs.Duration("probe-timeout", 500*time.Millisecond, "bound on each DevTools discovery HTTP step")
	minBackoff := fs.Duration("min-backoff", bridge.DefaultMinBackoff, "first reconnect delay (doubles, with jitter, up to -max-backoff)")
	maxBackoff := fs.Duration("max-backoff", bridge.DefaultMaxBackoff, "longest reconnect delay")
	convTabs := fs.Bool("conversation-tabs", true, "give each conversation a tab of its own, remembered as cdp-inspect remembers it (false: every command runs on the first page)")
	verbose := fs.Bool("v", false, "debug logging")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: bridge [flags]\n\n"+
			"Connects the local Chrome (DevTools endpoint) to an assistant runtime as a desktop\n"+
			"host-browser client: it runs host_browser_request commands, posts results, forwards\n"+
			"CDP events and reconnects with backoff and Last-Event-ID.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *token == "" {
		*token = os.Getenv("BROWSERCHAIN_TOKEN")
	}

	cfg := cdpinspect.DefaultConfig()
	host, portStr, err := net.SplitHostPort(*devtools)
	if err != nil {
		return fmt.Errorf("-devtools %q: %w", *devtools, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("-devtools %q: bad port", *devtools)
	}
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = host, port, int(probe.Milliseconds())
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := bridge.CheckDevTools(cfg, *wsURL); err != nil {
		return err
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var opts []cdpinspect.Option
	if *wsURL != "" {
		opts = append(opts, cdpinspect.WithWebSocketURL(*wsURL))
	}
	if *userDataDir != "" {
		opts = append(opts, cdpinspect.WithUserDataDirs(*userDataDir))
	}
	opts = append(opts, cdpinspect.WithLogger(log))

	bo := bridge.Options{
		ServerURL:   *server,
		Token:       *token,
		InterfaceID: *iface,
		ClientID:    *clientID,
		Dial:        bridge.CDPInspectDialer(cfg, opts...),
		Logger:      log,
		MinBackoff:  *minBackoff,
		MaxBackoff:  *maxBackoff,
	}
	if *convTabs {
		tabs := cdpinspect.NewProvider(cfg, opts...)
		defer tabs.Close()
		bo.DialConversation = bridge.CDPInspectTabs(tabs)
	}
	b, err := bridge.New(bo)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("bridge starting", "server", *server, "clientId", b.ClientID(), "interfaceId", *iface, "devtools", *devtools)
	err = b.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
