package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/local"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func defaultKeyFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "browserchain", "server.key")
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:7821", "address to listen on (loopback only)")
	keyFile := flag.String("key-file", defaultKeyFile(), "HS256 signing key file (created with mode 0600)")
	origins := flag.String("allowed-origins", extension.Origin, "comma-separated chrome-extension:// origins allowed to pair")
	actor := flag.String("actor", auth.DefaultActor, "actor principal id of paired clients")
	inspect := flag.Bool("cdp-inspect", false, "add cdp-inspect to every auto invocation")
	cdpPort := flag.Int("cdp-port", 9222, "DevTools port for cdp-inspect")
	useLocal := flag.Bool("local", true, "add the local Playwright backend as last resort")
	chromium := flag.String("chromium", "", "browser executable for the local backend (default: $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium)")
	allowedDomains := flag.String("allowed-domains", "", "comma-separated allow-list of page hosts (app.example.com, *.example.com; \"*\" for the open web); empty: no policy")
	allowWrites := flag.Bool("allow-writes", false, "with -allowed-domains: allow write-looking clicks, key presses and types")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", *listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %q: the reference server listens on loopback only", *listen)
	}
	key, err := auth.LoadOrCreateKey(*keyFile)
	if err != nil {
		return err
	}

	cfg := browserbackend.DefaultConfig()
	cfg.CDPInspect.Enabled = *inspect
	cfg.CDPInspect.Port = *cdpPort
	if err := cfg.Validate(); err != nil {
		return err
	}
	var g *guard.Guard
	var localArgs []string
	if *allowedDomains != "" {
		g, err = guard.New(guard.Policy{AllowedDomains: splitList(*allowedDomains), AllowWrites: *allowWrites, Logger: log})
		if err != nil {
			return fmt.Errorf("-allowed-domains: %w", err)
		}
		egress, err := guard.NewEgressProxy(g, guard.EgressOptions{})
		if err != nil {
			return err
		}
		defer egress.Close()
		localArgs = egress.ChromiumArgs() // the local Chromium reaches no private address
	}
	fallbacks := []browserbackend.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log))}
	var lb *local.Browser
	if *useLocal {
		lb = local.New(local.Options{ExecutablePath: *chromium, Logger: log, Args: localArgs})
		fallbacks = append(fallbacks, local.NewProvider(lb))
	}

	rt, err := runtime.New(runtime.Config{
		Key: key, AllowedOrigins: splitList(*origins), ActorPrincipalID: *actor, Logger: log, Fallbacks: fallbacks,
		Guard: g,
	})
	if err != nil {
		return err
	}
	srv := rt.HTTPServer(*listen)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("reference server listening", "module", "example-server", "addr", ln.Addr().String(),
		"keyFile", *keyFile, "allowedOrigins", *origins, "actor", *actor)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down", "module", "example-server")
	}
	rt.Close() // ends the SSE streams so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if lb != nil {
		_ = lb.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
