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

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub/natshub"
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
	natsURL := flag.String("nats", "", "NATS broker URL (JetStream on): run as one replica of several sharing it")
	replica := flag.String("replica", "", "this replica's name with -nats, unique among the replicas ([A-Za-z0-9_-])")
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

	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = *inspect
	cfg.Port = *cdpPort
	if err := cfg.Validate(); err != nil {
		return err
	}
	fallbacks := []browserbackend.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log))}
	var lb *local.Browser
	if *useLocal {
		lb = local.New(local.Options{ExecutablePath: *chromium, Logger: log})
		fallbacks = append(fallbacks, local.NewProvider(lb))
	}

	rcfg := runtime.Config{
		Key: key, AllowedOrigins: splitList(*origins), ActorPrincipalID: *actor, Logger: log, Fallbacks: fallbacks,
	}
	if (*natsURL == "") != (*replica == "") {
		return errors.New("-nats and -replica go together")
	}
	if *natsURL != "" {
		nc, err := nats.Connect(*natsURL, nats.Name("browserchain-"+*replica), nats.MaxReconnects(-1))
		if err != nil {
			return fmt.Errorf("-nats %q: %w", *natsURL, err)
		}
		defer nc.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		d, err := natshub.New(sctx, natshub.Config{Conn: nc, Replica: *replica, Logger: log})
		cancel()
		if err != nil {
			return err
		}
		rcfg.Distributed = d
		log.Info("replica of a distributed hub", "module", "example-server", "replica", *replica)
	}
	rt, err := runtime.New(rcfg)
	if err != nil {
		if rcfg.Distributed != nil {
			_ = rcfg.Distributed.Close()
		}
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
