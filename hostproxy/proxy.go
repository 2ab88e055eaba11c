package hostproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// DefaultTimeout is how long Request waits for a result when neither the
// request nor Options set a timeout.
const DefaultTimeout = 30 * time.Second

// DefaultMaxBodyBytes caps the body of the result, event and
// session-invalidated routes when Options.MaxBodyBytes is zero: 64 MiB,
// enough for full-page screenshots encoded as base64 inside a JSON string.
const DefaultMaxBodyBytes = 64 << 20

// Options configures a Proxy. Hub is required; every other zero field takes
// the documented default.
type Options struct {
	// Hub carries requests and cancels to clients and holds the roster.
	// Several Proxy values may share one hub: each decides the replay
	// eligibility of its own requests (Target.ReplayUntil, Hub.Retract).
	Hub eventhub.Hub
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// DefaultTimeout bounds each Request without its own Timeout; 0 means
	// DefaultTimeout (30 s).
	DefaultTimeout time.Duration
	// MaxBodyBytes caps route bodies and socket messages; 0 means
	// DefaultMaxBodyBytes. A larger body is answered 413.
	MaxBodyBytes int64
	// NewRequestID returns a fresh request id; nil means 16 random bytes in
	// hex.
	NewRequestID func() string
	// OnResult, when set, sees each result that passed the checks, on the
	// goroutine of the route or socket that received it, just before the
	// result is handed to its caller. It must return quickly. For
	// measurement and tests: which transport carried a result, the
	// client's own timings in the raw message.
	OnResult func(ResultReceipt)
	// EventRate and EventBurst are each client's budget of CDP event posts,
	// per second and at once; 0 means DefaultEventRate and
	// DefaultEventBurst. Posts beyond it are answered 429 events_shed and
	// counted (Stats). Results and invalidations are never charged to it.
	EventRate  float64
	EventBurst int
	// Now is the clock of the event budget and of timeout diagnostics; nil
	// means time.Now.
	Now func() time.Time
	// Relay, when set, carries results and events posted to this replica
	// for requests and backends on other replicas; nil keeps the
	// single-process behaviour.
	Relay Relay
}

// Route restricts which kind of client a Request may go to.
type Route int

const (
	// RouteAny: chrome-extension clients first, then desktop bridges.
	RouteAny Route = iota
	// RouteExtension allows only chrome-extension clients.
	RouteExtension
	// RouteBridge allows only clients that are not chrome-extension clients
	// (desktop bridges).
	RouteBridge
)

// Req is one CDP command for a host client.
type Req struct {
	// ConversationID is carried to the client and recorded on the pending
	// interaction.
	ConversationID string
	// Method is the CDP method, or a Vellum.* pseudo-method.
	Method string
	// Params is the JSON object of parameters; nil for none.
	Params json.RawMessage
	// SessionID is the flat CDP session the command is bound to, if any.
	SessionID string
	// Timeout overrides Options.DefaultTimeout when positive.
	Timeout time.Duration
	// TargetClientID pins one client.
	TargetClientID string
	// SourceActor, when set, restricts the choice to that actor's clients.
	SourceActor string
	// Route restricts the client kind; the zero value is RouteAny.
	Route Route
	// Backend labels errors with the backend kind that sent the request.
	Backend browserbackend.Kind
}

// Proxy sends CDP commands to hub clients and waits for their results, and
// serves the routes and sockets clients answer on. Its correlation core is
// Interactions; the routes (Mount), the result socket, the client frames,
// the event routing, the relay and the providers are adapters around it.
// Create it with New; all methods are safe for concurrent use. Close fails
// every request in flight.
type Proxy struct {
	hub      eventhub.Hub
	log      *slog.Logger
	timeout  time.Duration
	maxBody  int64
	newID    func() string
	onResult func(ResultReceipt)
	relay    Relay
	now      func() time.Time

	calls  *Interactions
	events *eventRouter
	diag   answers

	// doneCtx is cancelled by Close, for context.AfterFunc (a wait on
	// Close that holds no goroutine).
	doneCtx context.Context
	stopAll context.CancelFunc
}

// errProxyClosed is the cause Close fails pending calls with.
var errProxyClosed = errors.New("hostproxy: proxy is closed")

// New returns a Proxy. It panics when opts.Hub is nil (a programming error).
func New(opts Options) *Proxy {
	if opts.Hub == nil {
		panic("hostproxy: New: Options.Hub is nil")
	}
	p := &Proxy{
		hub:      opts.Hub,
		log:      opts.Logger,
		timeout:  opts.DefaultTimeout,
		maxBody:  opts.MaxBodyBytes,
		newID:    opts.NewRequestID,
		onResult: opts.OnResult,
		relay:    opts.Relay,
		now:      opts.Now,
		calls:    newInteractions(),
		diag:     answers{at: make(map[string]time.Time)},
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.doneCtx, p.stopAll = context.WithCancel(context.Background())
	if p.log == nil {
		p.log = slog.Default()
	}
	p.log = p.log.With("module", "hostproxy")
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBodyBytes
	}
	if p.newID == nil {
		p.newID = randomID
	}
	p.events = newEventRouter(p.hub, p.log, p.relay, newEventBudget(opts.EventRate, opts.EventBurst, p.now))
	return p
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Stats counts, since New, the CDP events the event routes dropped.
type Stats struct {
	// EventsShed is how many event posts were shed over their client's
	// event budget (Options.EventRate).
	EventsShed uint64
	// EventsUnattributed is how many events reached no backend because
	// nothing tied them to a tab while backends of more than one
	// conversation listened to their client.
	EventsUnattributed uint64
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{EventsShed: p.events.budget.shed.Load(), EventsUnattributed: p.events.unattributed.Load()}
}

// Hub returns the hub the proxy publishes to.
func (p *Proxy) Hub() eventhub.Hub { return p.hub }

// Interactions returns the proxy's table of pending interactions.
func (p *Proxy) Interactions() *Interactions { return p.calls }

// Close fails every request in flight with a ClassClosed error, sending each
// target client a cancel first, makes later Requests fail the same way and
// closes the result sockets. Idempotent; returns nil.
func (p *Proxy) Close() error {
	p.calls.close(errProxyClosed)
	p.stopAll()
	return nil
}

func (p *Proxy) closed() bool { return p.doneCtx.Err() != nil }

// maxAnswered bounds answers.at.
const maxAnswered = 4096

// answers remembers when each client last delivered a result, for timeout
// diagnostics; bounded by maxAnswered (cleared when full).
type answers struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *answers) note(clientID string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[clientID]; !ok && len(a.at) >= maxAnswered {
		clear(a.at)
	}
	a.at[clientID] = now
}

func (a *answers) last(clientID string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[clientID]
	return t, ok
}
