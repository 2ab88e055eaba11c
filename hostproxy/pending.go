package hostproxy

import (
	"errors"
	"sort"
	"time"
)

// InteractionKind is the kind of a pending host-proxy interaction (PXY-3).
// A Proxy creates only KindHostBrowser interactions; a host app that runs
// other host proxies (bash, file, …) in the same request-id space may
// register theirs with Proxy.Register under its own kind names, so the
// result route answers 409 for them instead of 404.
type InteractionKind string

// KindHostBrowser is the kind of every interaction a Proxy's Request creates.
const KindHostBrowser InteractionKind = "host_browser"

// Interaction is one request waiting for a client's answer (PXY-3).
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

// ErrDuplicateRequest is returned by Proxy.Register for a request id that is
// already pending.
var ErrDuplicateRequest = errors.New("hostproxy: request id already pending")

// errEmptyRequestID is returned by Proxy.Register for an empty request id.
var errEmptyRequestID = errors.New("hostproxy: register: empty request id")

// pending is one entry of Proxy.pending: the interaction and, for a request
// this Proxy sent, the channel its result is handed over on (buffered 1,
// written once, under Proxy.mu, by deliver). result is nil for an
// interaction the host app registered.
type pending struct {
	in     Interaction
	result chan ResultBody
	sent   time.Time // when this Proxy published it (zero for other kinds), for timeout diagnostics
}

// add records e as pending under p.mu.
func (p *Proxy) add(e *pending) error {
	if e.in.RequestID == "" {
		return errEmptyRequestID
	}
	if e.in.Registered.IsZero() {
		e.in.Registered = time.Now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[e.in.RequestID]; ok {
		return ErrDuplicateRequest
	}
	p.pending[e.in.RequestID] = e
	if e.result != nil {
		p.waiting[e.in.TargetClientID]++
	}
	return nil
}

// removeLocked deletes e, the pending entry of its request, under p.mu.
func (p *Proxy) removeLocked(e *pending) {
	delete(p.pending, e.in.RequestID)
	if e.result == nil {
		return
	}
	if n := p.waiting[e.in.TargetClientID] - 1; n > 0 {
		p.waiting[e.in.TargetClientID] = n
	} else {
		delete(p.waiting, e.in.TargetClientID)
	}
}

// Register records an interaction of the host app's own (PXY-3), typically of
// another kind than KindHostBrowser, so the result route answers 409 for it;
// nobody waits for it in this Proxy, so a post for a KindHostBrowser one is
// answered 404. It fails with ErrDuplicateRequest when in.RequestID is already
// pending, and with an error when it is empty. A zero Registered is set to
// now. Safe for concurrent use.
func (p *Proxy) Register(in Interaction) error { return p.add(&pending{in: in}) }

// Lookup returns the pending interaction with id without consuming it.
// Safe for concurrent use.
func (p *Proxy) Lookup(id string) (Interaction, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pending[id]
	if !ok {
		return Interaction{}, false
	}
	return e.in, true
}

// Resolve removes the interaction and returns it; ok is false when it was not
// pending (unknown or already resolved), so resolving twice is harmless. A
// Request whose interaction the host app resolves gets no result: it ends
// with its timeout, its context or Close, as if no answer came. Safe for
// concurrent use.
func (p *Proxy) Resolve(id string) (Interaction, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pending[id]
	if !ok {
		return Interaction{}, false
	}
	p.removeLocked(e)
	return e.in, true
}

// Pending returns the pending interactions keep accepts (nil keeps all),
// oldest first, ties by request id: look-ups by conversation or kind (PXY-3)
// are a keep function. keep runs under the proxy's lock and must not call
// the Proxy. Safe for concurrent use.
func (p *Proxy) Pending(keep func(Interaction) bool) []Interaction {
	p.mu.Lock()
	out := make([]Interaction, 0, len(p.pending))
	for _, e := range p.pending {
		if keep == nil || keep(e.in) {
			out = append(out, e.in)
		}
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Registered.Equal(out[j].Registered) {
			return out[i].Registered.Before(out[j].Registered)
		}
		return out[i].RequestID < out[j].RequestID
	})
	return out
}

// take removes id's entry if e is still its entry and reports whether it did;
// when the entry is gone and deliver handed a result over first, it returns
// that result with delivered true. deliver removes and sends under p.mu, so
// once take holds p.mu a delivered result is already in e.result.
func (p *Proxy) take(e *pending) (res ResultBody, delivered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[e.in.RequestID] == e {
		p.removeLocked(e)
		return ResultBody{}, false
	}
	select {
	case res := <-e.result:
		return res, true
	default:
		return ResultBody{}, false
	}
}

// isPending reports whether e is still the pending entry of its request.
func (p *Proxy) isPending(e *pending) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pending[e.in.RequestID] == e
}

// deliver removes the pending entry of res.RequestID and hands res to its
// caller, both under p.mu, and reports whether it did. An entry nobody waits
// for in this Proxy (registered with Register) is left pending: resolving it
// here would lose the result.
func (p *Proxy) deliver(res ResultBody) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.pending[res.RequestID]
	if e == nil || e.result == nil {
		return false
	}
	p.removeLocked(e)
	e.result <- res // buffered 1, and only one post finds the entry
	return true
}
