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
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
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

// DefaultListen is where the real Vellum extension looks for a self-hosted
// gateway.
const DefaultListen = "127.0.0.1:7830"

// config is the parsed command line.
type config struct {
	listen, keyFile, actor, chromium string
	traceDir                         string
	natsURL, replica                 string
	guard                            *guard.Policy
	origins                          []string
	policy                           browserbackend.Policy
	inspect, useLocal, verbose       bool
	cdpPort                          int
	remote                           remoteConfig
}

// parseFlags parses args (without the program name).
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.listen, "listen", DefaultListen, "address to listen on (loopback only)")
	fs.StringVar(&c.keyFile, "key-file", runtime.DefaultKeyFile(), "HS256 signing key file (created with mode 0600)")
	replace := fs.String("allowed-origins", "", "comma-separated extension ids or chrome-extension:// origins allowed to pair, replacing the default list")
	add := fs.String("add-origins", "", "comma-separated extension ids or chrome-extension:// origins allowed to pair in addition to the list")
	fs.StringVar(&c.actor, "actor", auth.DefaultActor, "actor principal id of paired clients")
	policy := fs.String("policy", browserbackend.DefaultPolicy.Name, "failover policy: default, or no-replay (a command that may have reached a browser is never run on another)")
	fs.BoolVar(&c.inspect, "cdp-inspect", false, "add cdp-inspect to every auto invocation")
	fs.IntVar(&c.cdpPort, "cdp-port", 9222, "DevTools port for cdp-inspect")
	fs.BoolVar(&c.useLocal, "local", true, "add the local Playwright backend as last resort")
	fs.StringVar(&c.chromium, "chromium", "", "browser executable for the local backend (default: $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium)")
	guardFlags := runtime.AddGuardFlags(fs)
	fs.StringVar(&c.natsURL, "nats", "", "NATS broker URL (JetStream on): run as one replica of several sharing it")
	fs.StringVar(&c.replica, "replica", "", "this replica's name with -nats, unique among the replicas ([A-Za-z0-9_-])")
	fs.StringVar(&c.traceDir, "trace-dir", "", "record every command of the command endpoint and rewrite its conversation's trace (.jsonl, .html) in this directory after each")
	fs.BoolVar(&c.verbose, "v", false, "debug logging")
	addRemoteFlags(fs, &c.remote)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if err := c.remote.check(); err != nil {
		return config{}, err
	}
	c.origins = allowedOrigins(*replace, *add)
	c.guard = guardFlags.Policy()
	switch *policy {
	case browserbackend.DefaultPolicy.Name:
		c.policy = browserbackend.DefaultPolicy
	case browserbackend.NoReplayPolicy.Name:
		c.policy = browserbackend.NoReplayPolicy
	default:
		return config{}, fmt.Errorf("-policy %q: want %q or %q", *policy, browserbackend.DefaultPolicy.Name, browserbackend.NoReplayPolicy.Name)
	}
	return c, nil
}

// allowedOrigins is the pairing allow-list: replace when given, else the
// published Vellum extension ids and the reference extension's; then add.
// Entries are ids or chrome-extension:// origins.
func allowedOrigins(replace, add string) []string {
	var base []string
	if strings.TrimSpace(replace) != "" {
		base = runtime.SplitList(replace)
	} else {
		base = append(runtime.VellumExtensionOrigins(), extension.Origin)
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range append(base, runtime.SplitList(add)...) {
		if !strings.Contains(o, "://") {
			o = "chrome-extension://" + o
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

func run() error {
	if handled, err := runVerb(os.Args[1:], os.Stdout); handled {
		return err
	}
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := checkLoopback(c.listen); err != nil {
		return err
	}
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
	g, localArgs, stopGuard, err := runtime.StartGuard(c.guard, log) // the local Chromium reaches no private address
	if err != nil {
		return err
	}
	defer stopGuard()
	insp := cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log))
	defer insp.Close() // its shared browser WebSocket, after the runtime
	fallbacks := []browserbackend.Provider{insp}
	var lb *local.Browser
	if c.useLocal {
		lb = local.New(local.Options{ExecutablePath: c.chromium, Logger: log, Args: localArgs})
		defer lb.Close() // after the server's shutdown
		fallbacks = append(fallbacks, local.NewProvider(lb))
	}
	rcfg := runtime.Config{
		Key: key, AllowedOrigins: c.origins, ActorPrincipalID: c.actor, Logger: log, Fallbacks: fallbacks,
		SelectorOptions: browserbackend.Options{Policy: c.policy},
		Guard:           g,
		TraceDir:        c.traceDir,
	}
	nc, err := joinReplicas(c, log, &rcfg)
	if err != nil {
		return err
	}
	if nc != nil {
		defer nc.Close()
	}
	return serve(c, rcfg, log)
}

// checkLoopback refuses a listen address that is not host:port on a
// loopback host.
func checkLoopback(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %q: the reference server listens on loopback only", listen)
	}
	return nil
}

// joinReplicas, with -nats and -replica, connects to the broker and sets
// rcfg.Distributed to this replica's hub; the caller closes the connection
// it returns (nil without -nats).
func joinReplicas(c config, log *slog.Logger, rcfg *runtime.Config) (*nats.Conn, error) {
	if (c.natsURL == "") != (c.replica == "") {
		return nil, errors.New("-nats and -replica go together")
	}
	if c.natsURL == "" {
		return nil, nil
	}
	nc, err := nats.Connect(c.natsURL, nats.Name("browserchain-"+c.replica), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("-nats %q: %w", c.natsURL, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	d, err := natshub.New(sctx, nc, c.replica, natshub.WithLogger(log))
	cancel()
	if err != nil {
		nc.Close()
		return nil, err
	}
	rcfg.Distributed = d
	log.Info("replica of a distributed hub", "module", "example-server", "replica", c.replica)
	return nc, nil
}

// serve runs the runtime of rcfg on c.listen (and the remote listener when
// configured) until the server fails or the process gets SIGINT or
// SIGTERM, which cancels every request in flight, then shuts both down.
func serve(c config, rcfg runtime.Config, log *slog.Logger) error {
	rt, err := runtime.New(rcfg)
	if err != nil {
		if rcfg.Distributed != nil {
			_ = rcfg.Distributed.Close()
		}
		return err
	}
	// A signal cancels every request's context, so a command in flight ends
	// now instead of at its deadline, and Shutdown does not wait for it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := rt.HTTPServer(c.listen)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		rt.Close()
		return err
	}
	stopRemote := func() {}
	if c.remote.listen != "" {
		if _, stopRemote, err = startRemote(c.remote, rt, log); err != nil {
			ln.Close()
			rt.Close()
			return err
		}
	}
	log.Info("reference server listening", "module", "example-server", "addr", ln.Addr().String(),
		"keyFile", c.keyFile, "allowedOrigins", strings.Join(c.origins, ","), "actor", c.actor, "failover", c.policy.Name)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down", "module", "example-server")
	}
	stopRemote() // ends the remote sockets and their hub registrations
	rt.Close()   // ends the SSE streams so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
