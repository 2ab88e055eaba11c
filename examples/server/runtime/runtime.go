package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/browserchain/browserchain/hostproxy/ratelimit"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/natsrelay"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// The published ids of the Vellum assistant's Chrome extension:
// its Chrome Web Store build and its dev, staging and local builds (each
// build's manifest key fixes its id).
const (
	VellumIDProd    = "hphbdmpffeigpcdjkckleobjmhhokpne"
	VellumIDDev     = "kajfcoaefacmjgdaloeafnpcfaeahcio"
	VellumIDStaging = "idpcnibfinmkdhlpenkglianflkbhfim"
	VellumIDLocal   = "gfcldmjjhcginboeldmknclbjilohcbn"
)

// VellumExtensionOrigins returns the chrome-extension:// origins of the
// published Vellum extension ids, a fresh slice on each call.
func VellumExtensionOrigins() []string {
	return []string{"chrome-extension://" + VellumIDProd, "chrome-extension://" + VellumIDDev,
		"chrome-extension://" + VellumIDStaging, "chrome-extension://" + VellumIDLocal}
}

// CommandPath is the mount point of the command endpoint.
const CommandPath = "/v1/browser/command"

// maxCommandBody caps the command endpoint's request body.
const maxCommandBody = 1 << 20

// Config configures New. Key is required.
type Config struct {
	// Key is the HS256 token key (see auth.LoadOrCreateKey).
	Key []byte
	// AllowedOrigins are the chrome-extension://<id> origins that may pair.
	AllowedOrigins []string
	// ActorPrincipalID is the actor paired clients act for; default
	// auth.DefaultActor.
	ActorPrincipalID string
	// Logger receives every record (selection records carry
	// module=cdp-factory); nil means slog.Default().
	Logger *slog.Logger
	// HubOptions are passed to eventhub.New. Ignored with Distributed.
	HubOptions []eventhub.Option
	// NoSubscribedSocket serves the result socket for results only, without
	// its subscribed mode (hostproxy.SocketOptions.Subscriber), as a server
	// from before that mode: clients then keep GET /v1/events and the event
	// POSTs.
	NoSubscribedSocket bool
	// Distributed, when set, makes this runtime one replica of several
	// sharing a NATS broker: its streams, roster, requests and
	// results go through that hub (created by the caller with natshub.New;
	// Close closes it, the caller closes its connection afterwards).
	Distributed *natshub.Hub
	// RequestTimeout is the proxy's per-command default; 0 means 30 s.
	RequestTimeout time.Duration
	// HostBridgeCooldown is the host-bridge provider's per-actor cooldown
	// (hostproxy.ProviderOptions.HostBridgeCooldown): 0 means the default
	// (30 s), negative disables it.
	HostBridgeCooldown time.Duration
	// Fallbacks are the providers tried after the hub's extension and
	// host-bridge providers, in order (cdp-inspect, local).
	Fallbacks []browserbackend.Provider
	// SelectorOptions tunes the selector; Providers and Logger are set by
	// New.
	SelectorOptions browserbackend.Options
	// TokenTTL is the access-token lifetime; 0 means auth.DefaultTokenTTL.
	TokenTTL time.Duration
	// Guard, optional, checks the url of every Page.navigate and
	// Target.createTarget sent through the command endpoint;
	// a refusal is a policy error with code forbidden. Other raw commands
	// are not policed: the tools (browserbackend/tools) apply the full
	// policy.
	Guard *guard.Guard
	// TraceDir, when set, records every command of the command endpoint
	// (selection, the command, its outcome; package
	// browserbackend/recorder) and rewrites its conversation's trace,
	// <id>.jsonl and <id>.html, in this directory after each. "": nothing is
	// recorded.
	TraceDir string
	// Sessions, optional, serves the actor's saved logins and their grants
	// at sessions.ContextsPath (local-only, like the command endpoint).
	Sessions *sessions.Store
	// Now is the auth clock (tests); nil means time.Now.
	Now func() time.Time
	// NewRequestID, when set, makes the proxy's request ids (tests).
	NewRequestID func() string
	// OnResult, when set, sees every accepted result
	// (hostproxy.Options.OnResult): tests and measurements count results by
	// transport with it.
	OnResult func(hostproxy.ResultReceipt)
	// MaxBodyBytes caps result and event bodies
	// (hostproxy.Options.MaxBodyBytes); 0 means 64 MiB.
	MaxBodyBytes int64
	// EventRate and EventBurst are each client's event-post budget
	// (hostproxy.Options.EventRate); 0 means the proxy's defaults.
	EventRate  float64
	EventBurst int
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are the timeouts of
	// the server HTTPServer returns; 0 means DefaultReadHeaderTimeout,
	// DefaultReadTimeout, DefaultIdleTimeout.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
}

// Defaults of the server HTTPServer returns. They bound a client that sends
// its request slowly or holds an idle connection (slowloris).
const (
	// DefaultReadHeaderTimeout bounds reading the request line and headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included
	// (bodies are at most 64 MiB, sent over loopback).
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds a keep-alive connection between requests.
	DefaultIdleTimeout = 2 * time.Minute
)

// Runtime is a composed reference runtime. Its fields are read-only after
// New; Handler serves every route.
type Runtime struct {
	// Hub holds this process's streams: the whole hub in one process, the
	// replica's local part with Config.Distributed.
	Hub *eventhub.InProcess
	// Cluster is the hub the proxy publishes to: Hub, or the distributed
	// hub spanning every replica.
	Cluster  eventhub.Hub
	Proxy    *hostproxy.Proxy
	Auth     *auth.Authority
	Limiter  *ratelimit.Limiter
	Selector *browserbackend.Selector
	Handler  http.Handler

	log      *slog.Logger
	guard    *guard.Guard
	rec      *recorder.Recorder // nil without Config.TraceDir
	traceDir string
	dist     *natshub.Hub
	timeouts [3]time.Duration // read header, read, idle
}

// New composes a Runtime. Close releases it.
func New(cfg Config) (*Runtime, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	a, err := auth.New(auth.Config{
		Key: cfg.Key, AllowedOrigins: cfg.AllowedOrigins, ActorPrincipalID: cfg.ActorPrincipalID,
		Logger: log, Now: cfg.Now, TokenTTL: cfg.TokenTTL,
	})
	if err != nil {
		return nil, err
	}
	popts := hostproxy.Options{Logger: log, DefaultTimeout: cfg.RequestTimeout,
		NewRequestID: cfg.NewRequestID, OnResult: cfg.OnResult, MaxBodyBytes: cfg.MaxBodyBytes,
		EventRate: cfg.EventRate, EventBurst: cfg.EventBurst, Now: cfg.Now}
	var (
		hub     *eventhub.InProcess
		cluster eventhub.Hub
		proxy   *hostproxy.Proxy
		events  http.Handler
		ping    http.Handler
	)
	if d := cfg.Distributed; d != nil {
		hub, cluster, proxy = d.Local(), d, natsrelay.NewProxy(d, popts)
		events, ping = d.EventsHandler(), d.PingHandler()
	} else {
		hub = eventhub.New(append([]eventhub.Option{eventhub.WithLogger(log)}, cfg.HubOptions...)...)
		popts.Hub = hub
		cluster, proxy = hub, hostproxy.New(popts)
		events, ping = hub.EventsHandler(), hub.PingHandler()
	}
	// The proxy publishes each host_browser_request with its deadline as
	// its replay bound and retracts it when its caller stops waiting: a
	// reconnect never replays one whose caller already failed.
	so := cfg.SelectorOptions
	so.Logger = log
	so.Providers = append([]browserbackend.Provider{
		proxy.ExtensionProvider(hostproxy.ProviderOptions{}),
		proxy.HostBridgeProvider(hostproxy.ProviderOptions{HostBridgeCooldown: cfg.HostBridgeCooldown}),
	}, cfg.Fallbacks...)
	rt := &Runtime{
		Hub: hub, Cluster: cluster, Proxy: proxy, Auth: a, Selector: browserbackend.NewSelector(so),
		// Event posts and invalidations come in bursts (one per CDP event):
		// they have the proxy's own per-client budget, so they never use up
		// the budget result posts need. A result post of a client
		// the proxy waits on is an answer to the server's own request:
		// refusing it would turn a command the browser ran into a timeout
		// at its deadline, so it is not counted either; stray
		// result posts are. Only an authenticated request (Identify found
		// a valid token) is exempt: a flood without one is counted, and
		// refused by Middleware after.
		Limiter: ratelimit.New(ratelimit.Config{Logger: log, Exempt: func(r *http.Request) bool {
			if _, ok := eventhub.ActorFrom(r.Context()); ok && (r.URL.Path == wire.PathHostBrowserEvent ||
				r.URL.Path == wire.PathHostBrowserSessionInvalidated || proxy.AwaitsResult(r)) {
				return true
			}
			return ratelimit.DefaultExempt(r)
		}}),
		log:      log,
		guard:    cfg.Guard,
		traceDir: cfg.TraceDir,
		dist:     cfg.Distributed,
		timeouts: [3]time.Duration{
			cmp.Or(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
			cmp.Or(cfg.ReadTimeout, DefaultReadTimeout),
			cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout),
		},
	}
	if cfg.TraceDir != "" {
		rt.rec = recorder.New(recorder.Options{})
	}

	authed := http.NewServeMux()
	authed.Handle("GET "+wire.PathEvents, events)
	authed.Handle("POST "+wire.PathPing, ping)
	proxy.Mount(authed)

	mux := http.NewServeMux()
	mux.Handle("POST "+wire.PathPair, a.PairHandler())
	mux.Handle("POST "+wire.PathPairRefresh, a.RefreshHandler())
	mux.Handle("POST "+CommandPath, a.LocalOnly(http.HandlerFunc(rt.serveCommand)))
	if cfg.Sessions != nil {
		contexts := a.LocalOnly(sessions.ContextsHandler(cfg.Sessions, func(*http.Request) string { return a.ActorPrincipalID() }))
		mux.Handle(sessions.ContextsPath, contexts)
		mux.Handle(sessions.ContextsPath+"/", contexts)
	}
	// A web page's request is refused before the limiter counts it (a page
	// the user visits must not spend the paired clients' budget); Identify
	// lets the limiter see the actor; Middleware then refuses anything
	// without a valid token.
	protected := a.RefuseWebPages(a.Identify(rt.Limiter.Handler(a.Middleware(authed))))
	for _, p := range []string{wire.PathEvents, wire.PathPing, wire.PathHostBrowserResult,
		wire.PathHostBrowserEvent, wire.PathHostBrowserSessionInvalidated} {
		mux.Handle(p, protected)
	}
	// The result socket authenticates with its first message (a browser
	// cannot set headers on a WebSocket), so it sits outside Middleware;
	// like pairing it is local-only, a web page's handshake is refused
	// before it is counted, and its handshakes are rate-limited as
	// unauthenticated requests (20 a minute) with a budget of their
	// own, which other unauthenticated requests cannot use up.
	// It also offers the subscribed mode (one socket for requests, cancels,
	// results and events), registering through the hub the events route
	// uses; a client that does not ask for it keeps GET /v1/events.
	var socketSub hostproxy.Subscriber = hub
	if s, ok := cluster.(hostproxy.Subscriber); ok {
		socketSub = s
	}
	if cfg.NoSubscribedSocket {
		socketSub = nil
	}
	handshakes := ratelimit.New(ratelimit.Config{Logger: log, Exempt: func(*http.Request) bool { return false }})
	mux.Handle("GET "+wire.PathHostBrowserResultSocket, a.LocalOnly(a.RefuseWebPages(handshakes.Handler(proxy.ResultSocketHandler(
		hostproxy.SocketOptions{Verify: a.VerifyClient, AllowedOrigins: cfg.AllowedOrigins, LoopbackOnly: true,
			Subscriber: socketSub})))))
	rt.Handler = mux
	return rt, nil
}

// HTTPServer returns an http.Server serving rt.Handler on addr with the
// read-header, read and idle timeouts of Config, so a client that trickles
// its headers or body, or parks an idle connection, is cut off instead of
// holding a connection and a goroutine forever. It sets no WriteTimeout:
// the events stream is long-lived and the hub bounds each of its writes
// itself (eventhub.WithWriteTimeout). ReadTimeout does not end the events
// stream either: net/http lifts the read deadline once a request has been
// read. The caller runs and shuts down the server.
func (rt *Runtime) HTTPServer(addr string) *http.Server {
	return &http.Server{Addr: addr, Handler: rt.Handler,
		ReadHeaderTimeout: rt.timeouts[0], ReadTimeout: rt.timeouts[1], IdleTimeout: rt.timeouts[2]}
}

// Close cancels in-flight requests and ends every stream. Idempotent.
func (rt *Runtime) Close() error {
	rt.Proxy.Close()
	if rt.dist != nil {
		return rt.dist.Close() // closes Hub too
	}
	return rt.Hub.Close()
}

// CommandRequest is the body of POST /v1/browser/command.
type CommandRequest struct {
	ConversationID string          `json:"conversationId"`
	BrowserMode    string          `json:"browser_mode"`
	Method         string          `json:"method"`
	Params         json.RawMessage `json:"params,omitempty"`
	SessionID      string          `json:"sessionId,omitempty"`
	// InterfaceID is the turn's interface ("macos", "cli", …); default "cli".
	InterfaceID string `json:"interfaceId,omitempty"`
	// TargetClientID aims the command at one extension client.
	TargetClientID string `json:"targetClientId,omitempty"`
	// TimeoutMs bounds the command; default 30000.
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// CommandResponse is the answer of POST /v1/browser/command.
type CommandResponse struct {
	Backend  browserbackend.Kind      `json:"backend,omitempty"`
	Attempts []browserbackend.Attempt `json:"attempts"`
	Result   json.RawMessage          `json:"result,omitempty"`
	Error    *CommandError            `json:"error,omitempty"`
	// Report is the human-readable failure report of a selection error.
	Report string `json:"report,omitempty"`
}

// CommandError describes a failed command.
type CommandError struct {
	Class   browserbackend.Class `json:"class"`
	Code    string               `json:"code,omitempty"`
	CDPCode int                  `json:"cdpCode,omitempty"`
	Message string               `json:"message"`
}

// Run runs one command as one invocation of the runtime's actor and returns
// the result with the attempt sequence. It is what the command endpoint
// calls.
func (rt *Runtime) Run(ctx context.Context, req CommandRequest) (CommandResponse, error) {
	mode, err := rt.Selector.ParseMode(req.BrowserMode)
	if err != nil {
		return CommandResponse{Attempts: []browserbackend.Attempt{}}, err
	}
	iface := req.InterfaceID
	if iface == "" {
		iface = wire.InterfaceCLI
	}
	timeout := 30 * time.Second
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rt.checkURL(ctx, req); err != nil {
		return CommandResponse{Attempts: []browserbackend.Attempt{}}, err
	}
	client := rt.Selector.Client(browserbackend.Invocation{
		ConversationID: req.ConversationID, InterfaceID: iface, ActorPrincipalID: rt.Auth.ActorPrincipalID(),
		Mode: mode, TargetClientID: req.TargetClientID,
	})
	defer client.Close()
	var res json.RawMessage
	if rt.rec == nil {
		res, err = client.Send(ctx, browserbackend.Command{Method: req.Method, Params: req.Params, SessionID: req.SessionID})
	} else {
		res, err = rt.recordCommand(ctx, client, req)
	}
	out := CommandResponse{Backend: client.Kind(), Attempts: client.Attempts(), Result: res}
	if out.Attempts == nil {
		out.Attempts = []browserbackend.Attempt{}
	}
	return out, err
}

// checkURL applies Config.Guard to the url param of the commands that load
// a page.
func (rt *Runtime) checkURL(ctx context.Context, req CommandRequest) error {
	if rt.guard == nil || (req.Method != "Page.navigate" && req.Method != "Target.createTarget") {
		return nil
	}
	var p struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(req.Params, &p)
	return rt.guard.CheckURL(ctx, p.URL)
}

func (rt *Runtime) serveCommand(w http.ResponseWriter, r *http.Request) {
	// A web page may not drive the browser: cross-site requests carry an
	// Origin, and a JSON content type forces a CORS preflight we never grant.
	if o := r.Header.Get("Origin"); o != "" {
		writeCommand(w, http.StatusForbidden, CommandResponse{Error: &CommandError{Class: browserbackend.ClassPolicy,
			Code: "origin_not_allowed", Message: "requests from web pages are refused"}})
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeCommand(w, http.StatusUnsupportedMediaType, CommandResponse{Error: &CommandError{Class: browserbackend.ClassPolicy,
			Code: "bad_request", Message: "Content-Type must be application/json"}})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCommandBody))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		writeCommand(w, http.StatusRequestEntityTooLarge, CommandResponse{Error: &CommandError{Class: browserbackend.ClassPolicy,
			Code: "body_too_large", Message: fmt.Sprintf("request body exceeds %d bytes", maxCommandBody)}})
		return
	}
	var req CommandRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || req.Method == "" {
		msg := "body must be {conversationId, browser_mode, method, params}"
		if err != nil {
			msg += ": " + err.Error()
		}
		writeCommand(w, http.StatusBadRequest, CommandResponse{Error: &CommandError{Class: browserbackend.ClassPolicy,
			Code: "bad_request", Message: msg}})
		return
	}
	resp, err := rt.Run(r.Context(), req)
	if err == nil {
		writeCommand(w, http.StatusOK, resp)
		return
	}
	e := browserbackend.Classify(err, false)
	resp.Error = &CommandError{Class: e.Class, Code: e.Code, CDPCode: e.CDPCode, Message: err.Error()}
	var se *browserbackend.SelectionError
	status := http.StatusBadGateway
	switch {
	case errors.As(err, &se):
		// No backend served the command: the report lists every attempt.
		resp.Report = se.Report()
		status = http.StatusServiceUnavailable
	case e.Code == guard.CodeForbidden:
		status = http.StatusForbidden
	case e.Class == browserbackend.ClassProtocol:
		status = http.StatusUnprocessableEntity
	case e.Class == browserbackend.ClassPolicy:
		status = http.StatusBadRequest
	case e.Class == browserbackend.ClassTimeout:
		status = http.StatusGatewayTimeout
	case e.Class == browserbackend.ClassUnavailable:
		status = http.StatusServiceUnavailable
	}
	rt.log.Warn("command failed", "module", "example-server", "method", req.Method, "mode", req.BrowserMode,
		"class", e.Class, "code", e.Code)
	writeCommand(w, status, resp)
}

func writeCommand(w http.ResponseWriter, status int, v CommandResponse) {
	if v.Attempts == nil {
		v.Attempts = []browserbackend.Attempt{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// SplitList splits a comma-separated flag value, dropping blanks and the
// space around entries: the list flags of the example programs
// (-allowed-origins, -allowed-domains, …) all read this way.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// DefaultKeyFile is where the example programs keep the server's HS256
// signing key unless told otherwise: browserchain/server.key under the
// user's configuration directory (os.UserConfigDir), or under the working
// directory when there is none.
func DefaultKeyFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "browserchain", "server.key")
}

// recordCommand sends req's command on client with the runtime's recorder
// on, then rewrites the conversation's trace files.
func (rt *Runtime) recordCommand(ctx context.Context, client *browserbackend.Client, req CommandRequest) (json.RawMessage, error) {
	ctx, rc := rt.rec.Begin(ctx, req.ConversationID, "command")
	var s cdp.Session = client
	if req.SessionID != "" {
		s = client.Session(req.SessionID)
	}
	var params any
	if len(req.Params) > 0 {
		params = jsonv2.Value(req.Params)
	}
	var res jsonv2.Value
	err := rc.Session(s).Call(ctx, req.Method, params, &res)
	tab := ""
	if t, ok := client.Tab(); ok {
		tab = t.ID
	}
	rc.Served(client.Kind(), tab, client.Attempts())
	code := ""
	var be *browserbackend.Error
	if errors.As(err, &be) {
		code = be.Code
	}
	rc.End(code, err)
	if werr := rt.rec.WriteFiles(rt.traceDir, req.ConversationID); werr != nil {
		rt.log.Warn("writing the trace failed", "module", "example-server", "conversationId", req.ConversationID, "error", werr)
	}
	return json.RawMessage(res), err
}
