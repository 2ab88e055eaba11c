package browserbackendtest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
)

// Reply decides the answer to one command. Returning (nil, nil) answers with
// an empty result object.
type Reply func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error)

// Backend is a fake ScopedClient and EventSource. Its answers come from
// Handle (by default {} for every command), optionally overridden per call
// number with FailOn. It records every command and counts Close calls. Safe
// for concurrent use.
type Backend struct {
	// Kind is reported in errors it makes.
	Kind browserbackend.Kind
	// Handle answers commands; nil answers {}.
	Handle Reply

	bus    browserbackend.EventBus
	mu     sync.Mutex
	calls  []browserbackend.Command
	faults map[int]error
	subs   []Subscription
	closed atomic.Int32
}

// Subscription is one subscription made on a fake Backend: its method and
// the buffer asked for (0: the default, as Subscribe asks).
type Subscription struct {
	Method string
	Buffer int
}

var (
	_ browserbackend.ScopedClient = (*Backend)(nil)
	_ browserbackend.EventSource  = (*Backend)(nil)

	_ browserbackend.BufferedEventSource = (*Backend)(nil)
)

// NewBackend returns a fake backend of kind k answering with h (nil: {}).
func NewBackend(k browserbackend.Kind, h Reply) *Backend {
	return &Backend{Kind: k, Handle: h}
}

// FailOn makes the nth command (1-based, counted across the backend's life)
// fail with err instead of reaching Handle.
func (b *Backend) FailOn(n int, err error) *Backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.faults == nil {
		b.faults = make(map[int]error)
	}
	b.faults[n] = err
	return b
}

// Send records cmd and answers it.
func (b *Backend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if b.closed.Load() > 0 {
		return nil, &browserbackend.Error{Class: browserbackend.ClassClosed, Code: browserbackend.CodeClosed,
			Backend: b.Kind, Method: cmd.Method, Message: "fake backend closed"}
	}
	b.mu.Lock()
	b.calls = append(b.calls, cmd)
	n := len(b.calls)
	fault := b.faults[n]
	h := b.Handle
	b.mu.Unlock()
	if fault != nil {
		return nil, fault
	}
	if h == nil {
		return json.RawMessage(`{}`), nil
	}
	res, err := h(ctx, cmd)
	if err == nil && res == nil {
		res = json.RawMessage(`{}`)
	}
	return res, err
}

// Calls returns the commands received so far.
func (b *Backend) Calls() []browserbackend.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]browserbackend.Command(nil), b.calls...)
}

// Methods returns the methods of the commands received so far.
func (b *Backend) Methods() []string {
	calls := b.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Method
	}
	return out
}

// Emit delivers a CDP event to subscribers.
func (b *Backend) Emit(ev browserbackend.Event) { b.bus.Publish(ev) }

// Subscribe implements EventSource.
func (b *Backend) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return b.SubscribeBuffer(method, 0)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource: Subscribe with a
// channel of capacity buffer (0 or less: the default).
// It records each subscription (Subscriptions).
func (b *Backend) SubscribeBuffer(method string, buffer int) (<-chan browserbackend.Event, func()) {
	b.mu.Lock()
	b.subs = append(b.subs, Subscription{Method: method, Buffer: buffer})
	b.mu.Unlock()
	return b.bus.SubscribeBuffer(method, buffer)
}

// Subscriptions returns every subscription made on b, in order.
func (b *Backend) Subscriptions() []Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Subscription(nil), b.subs...)
}

// Close marks the backend closed; later Sends fail with ErrClosed.
func (b *Backend) Close() error {
	b.closed.Add(1)
	b.bus.Close()
	return nil
}

// Closed reports whether Close was called at least once.
func (b *Backend) Closed() bool { return b.closed.Load() > 0 }

// Provider is a fake browserbackend.Provider. Each Propose returns a
// candidate whose Build returns the next value of NewBackend (a fresh fake
// per build by default), unless Skip or Err is set. It counts proposals and
// builds and keeps every backend it built. Safe for concurrent use.
type Provider struct {
	K      browserbackend.Kind
	Reason string
	// Skip, when set, makes Propose skip with this code.
	Skip string
	// Err, when set, makes Propose fail selection with it.
	Err error
	// BuildErr, when set, makes Build fail with it.
	BuildErr error
	// NewBackend makes the backend of each build; nil means
	// NewBackend(K, nil).
	NewBackend func() *Backend
	// CooldownKey and CooldownFor are copied into the candidate.
	CooldownKey string
	CooldownFor time.Duration
	// Available, when non-nil, is consulted on every Propose; false skips
	// with code no_client.
	Available func() bool
	// Desc, when set, is the provider's descriptor (its Kind defaults to K);
	// nil means a descriptor pinned by browser_mode equal to K's name, with
	// transport "fake" and no other declaration.
	Desc *browserbackend.Descriptor

	mu       sync.Mutex
	proposed int
	builds   int
	backends []*Backend
	pinned   []bool
}

// Describe implements Provider: Desc when set, else a plain descriptor of K.
func (p *Provider) Describe() browserbackend.Descriptor {
	if p.Desc != nil {
		d := *p.Desc
		if d.Kind == "" {
			d.Kind = p.K
		}
		return d
	}
	return browserbackend.Descriptor{Kind: p.K, Mode: browserbackend.Mode(p.K), Transport: "fake"}
}

// Propose implements Provider.
func (p *Provider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	p.mu.Lock()
	p.proposed++
	p.pinned = append(p.pinned, env.Pinned)
	skip, perr, avail := p.Skip, p.Err, p.Available
	p.mu.Unlock()
	if perr != nil {
		return browserbackend.Candidate{}, perr
	}
	if skip != "" {
		return browserbackend.Candidate{}, browserbackend.Skip(skip, "fake provider told to skip")
	}
	if avail != nil && !avail() {
		return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient, "fake provider unavailable")
	}
	if p.CooldownKey != "" && env.Cooldowns.Active(p.CooldownKey) && !env.Pinned {
		return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeCooldown, "cooldown active")
	}
	reason := p.Reason
	if reason == "" {
		reason = "fake: " + string(p.K)
	}
	c := browserbackend.Candidate{Kind: p.K, Reason: reason, Build: p.build}
	if !env.Pinned {
		c.CooldownKey = p.CooldownKey
		c.CooldownFor = p.CooldownFor
	}
	return c, nil
}

func (p *Provider) build(ctx context.Context) (browserbackend.ScopedClient, error) {
	p.mu.Lock()
	p.builds++
	berr := p.BuildErr
	mk := p.NewBackend
	p.mu.Unlock()
	if berr != nil {
		return nil, berr
	}
	var b *Backend
	if mk != nil {
		b = mk()
	} else {
		b = NewBackend(p.K, nil)
	}
	p.mu.Lock()
	p.backends = append(p.backends, b)
	p.mu.Unlock()
	return b, nil
}

// Proposed reports how many times Propose ran.
func (p *Provider) Proposed() int { p.mu.Lock(); defer p.mu.Unlock(); return p.proposed }

// Builds reports how many times a candidate was built.
func (p *Provider) Builds() int { p.mu.Lock(); defer p.mu.Unlock(); return p.builds }

// Backends returns the backends built so far.
func (p *Provider) Backends() []*Backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Backend(nil), p.backends...)
}

// PinnedCalls reports env.Pinned of every Propose, in order.
func (p *Provider) PinnedCalls() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.pinned...)
}

// TransportErr returns a transport-class error with code (default
// transport_error), as a dead backend would.
func TransportErr(code string) error {
	if code == "" {
		code = browserbackend.CodeTransportError
	}
	return browserbackend.TransportError(code, "fake transport failure", nil)
}

// DispatchedTransportErr is TransportErr with Dispatched set: the command may
// have reached the browser.
func DispatchedTransportErr(code string) error {
	e := TransportErr(code).(*browserbackend.Error)
	e.Dispatched = true
	return e
}

// ProtocolErr returns a protocol-class error with CDP code cdpCode.
func ProtocolErr(cdpCode int, msg string) error { return browserbackend.ProtocolError(cdpCode, msg) }

// JSON answers every command with v marshalled.
func JSON(v any) Reply {
	raw, err := json.Marshal(v)
	return func(context.Context, browserbackend.Command) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		return raw, nil
	}
}
