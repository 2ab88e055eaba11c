package hostproxy

import (
	"errors"
	"sort"
	"sync"
	"time"
)

// InteractionKind is the kind of a pending interaction. A Proxy creates only
// KindHostBrowser interactions; a host app that runs other host proxies in
// the same request-id space registers theirs under its own kind names, so
// the result route answers 409 for them instead of 404.
type InteractionKind string

// KindHostBrowser is the kind of every interaction a Proxy's Request creates.
const KindHostBrowser InteractionKind = "host_browser"

// Interaction is one request waiting for a client's answer.
type Interaction struct {
	RequestID      string
	Kind           InteractionKind
	ConversationID string
	// TargetClientID is the client the request was sent to; empty when the
	// request was not aimed at one client (then any client may answer).
	TargetClientID string
	// TargetActor is the actor principal id of the target client; when set,
	// only that actor may answer.
	TargetActor string
	// Registered is when the interaction became pending.
	Registered time.Time
}

// ErrDuplicateRequest is returned by Interactions.Register for a request id
// that is already pending.
var ErrDuplicateRequest = errors.New("hostproxy: request id already pending")

// errEmptyRequestID is returned by Interactions.Register for an empty
// request id.
var errEmptyRequestID = errors.New("hostproxy: register: empty request id")

// Interactions is a Proxy's table of pending interactions keyed by request
// id: the calls its Request waits on and the interactions the host app
// registers. Its exported methods serve the host app; the Proxy registers,
// delivers to and cancels its own calls through the unexported ones. Safe
// for concurrent use.
type Interactions struct {
	mu sync.Mutex
	m  map[string]*call
	// waiting counts, per target client, the calls whose result someone
	// waits for (awaits).
	waiting map[string]int
	// err, once set by close, fails every later call.
	err error
}

// call is one entry of Interactions: the interaction and, for a request a
// Proxy sent, the channel its result is handed over on (buffered 1, written
// once, under Interactions.mu, by deliver). result is nil for an interaction
// the host app registered.
type call struct {
	in     Interaction
	result chan ResultBody
	// failed is closed, with err set, when close ends the call unanswered.
	failed chan struct{}
	err    error
	sent   time.Time // when the Proxy published it, for timeout diagnostics
}

// newCall returns the entry of a request the Proxy is about to send.
func newCall(in Interaction, sent time.Time) *call {
	return &call{in: in, result: make(chan ResultBody, 1), failed: make(chan struct{}), sent: sent}
}

func newInteractions() *Interactions {
	return &Interactions{m: make(map[string]*call), waiting: make(map[string]int)}
}

// Register records an interaction of the host app's own, typically of
// another kind than KindHostBrowser, so the result route answers 409 for it.
// Nobody waits for it in the Proxy, so a result posted for a KindHostBrowser
// one is answered 404. It fails with ErrDuplicateRequest when in.RequestID
// is already pending, and with an error when it is empty. A zero Registered
// is set to now.
func (t *Interactions) Register(in Interaction) error { return t.add(&call{in: in}) }

// Lookup returns the pending interaction with id without consuming it.
func (t *Interactions) Lookup(id string) (Interaction, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return Interaction{}, false
	}
	return e.in, true
}

// Resolve removes the interaction and returns it; ok is false when it was not
// pending, so resolving twice is harmless. A Request whose interaction the
// host app resolves gets no result: it ends with its timeout, its context or
// Close, as if no answer came.
func (t *Interactions) Resolve(id string) (Interaction, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return Interaction{}, false
	}
	t.removeLocked(e)
	return e.in, true
}

// List returns the pending interactions keep accepts (nil keeps all), oldest
// first, ties by request id. keep runs under the table's lock and must not
// call it.
func (t *Interactions) List(keep func(Interaction) bool) []Interaction {
	t.mu.Lock()
	out := make([]Interaction, 0, len(t.m))
	for _, e := range t.m {
		if keep == nil || keep(e.in) {
			out = append(out, e.in)
		}
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Registered.Equal(out[j].Registered) {
			return out[i].Registered.Before(out[j].Registered)
		}
		return out[i].RequestID < out[j].RequestID
	})
	return out
}

// add records e as pending. A call (e.result set) fails with the cause
// after close.
func (t *Interactions) add(e *call) error {
	if e.in.RequestID == "" {
		return errEmptyRequestID
	}
	if e.in.Registered.IsZero() {
		e.in.Registered = time.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.result != nil && t.err != nil {
		return t.err
	}
	if _, ok := t.m[e.in.RequestID]; ok {
		return ErrDuplicateRequest
	}
	t.m[e.in.RequestID] = e
	if e.result != nil {
		t.waiting[e.in.TargetClientID]++
	}
	return nil
}

// removeLocked deletes e, the entry of its request, under t.mu.
func (t *Interactions) removeLocked(e *call) {
	delete(t.m, e.in.RequestID)
	if e.result == nil {
		return
	}
	if n := t.waiting[e.in.TargetClientID] - 1; n > 0 {
		t.waiting[e.in.TargetClientID] = n
	} else {
		delete(t.waiting, e.in.TargetClientID)
	}
}

// deliver removes the entry of res.RequestID and hands res to its caller,
// both under t.mu, and reports whether it did. An interaction nobody waits
// for (registered with Register) is left pending: resolving it here would
// lose the result.
func (t *Interactions) deliver(res ResultBody) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[res.RequestID]
	if e == nil || e.result == nil {
		return false
	}
	t.removeLocked(e)
	e.result <- res // buffered 1, and only one delivery finds the entry
	return true
}

// take cancels e on its caller's side: it removes e if e is still the entry
// of its request. When e is gone because deliver handed a result over first,
// it returns that result with delivered true; deliver removes and sends
// under t.mu, so once take holds t.mu a delivered result is in e.result.
func (t *Interactions) take(e *call) (res ResultBody, delivered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[e.in.RequestID] == e {
		t.removeLocked(e)
		return ResultBody{}, false
	}
	select {
	case res := <-e.result:
		return res, true
	default:
		return ResultBody{}, false
	}
}

// isPending reports whether e is still the entry of its request.
func (t *Interactions) isPending(e *call) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[e.in.RequestID] == e
}

// awaits reports whether a call to clientID waits for its result.
func (t *Interactions) awaits(clientID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waiting[clientID] > 0
}

// inFlight counts the published calls to clientID and the age of the oldest
// at now.
func (t *Interactions) inFlight(clientID string, now time.Time) (n int, oldest time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.m {
		if e.in.TargetClientID == clientID && !e.sent.IsZero() {
			n++
			oldest = max(oldest, now.Sub(e.sent))
		}
	}
	return n, oldest
}

// close fails every pending call with cause (closing its failed channel) and
// every later one at add. Interactions the host app registered stay. Only
// the first cause counts.
func (t *Interactions) close(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	t.err = cause
	for _, e := range t.m {
		if e.result == nil {
			continue
		}
		t.removeLocked(e)
		e.err = cause
		close(e.failed)
	}
}
