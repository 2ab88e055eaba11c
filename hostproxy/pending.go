package hostproxy

import (
	"errors"
	"sort"
	"sync"
	"time"
)

// InteractionKind is the kind of a pending host-proxy interaction (PXY-3).
type InteractionKind string

// The host-proxy interaction kinds.
const (
	KindHostBrowser    InteractionKind = "host_browser"
	KindHostBash       InteractionKind = "host_bash"
	KindHostFile       InteractionKind = "host_file"
	KindHostCU         InteractionKind = "host_cu"
	KindHostAppControl InteractionKind = "host_app_control"
)

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
	// Registered is when Register was called.
	Registered time.Time
}

// ErrDuplicateRequest is returned by Tracker.Register for a request id that
// is already pending.
var ErrDuplicateRequest = errors.New("hostproxy: request id already pending")

// Tracker holds pending interactions keyed by request id (PXY-3). The zero
// value is ready to use; all methods are safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	pending map[string]Interaction
}

// Register records in as pending. It fails with ErrDuplicateRequest when its
// RequestID is already pending, and with an error when RequestID is empty.
func (t *Tracker) Register(in Interaction) error {
	if in.RequestID == "" {
		return errors.New("hostproxy: register: empty request id")
	}
	if in.Registered.IsZero() {
		in.Registered = time.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[string]Interaction)
	}
	if _, ok := t.pending[in.RequestID]; ok {
		return ErrDuplicateRequest
	}
	t.pending[in.RequestID] = in
	return nil
}

// Get returns the pending interaction with id, without consuming it.
func (t *Tracker) Get(id string) (Interaction, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in, ok := t.pending[id]
	return in, ok
}

// Resolve removes the interaction and returns it; ok is false when it was not
// pending (unknown or already resolved). Resolving twice is harmless.
func (t *Tracker) Resolve(id string) (Interaction, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in, ok := t.pending[id]
	if ok {
		delete(t.pending, id)
	}
	return in, ok
}

// ByConversation returns the interactions pending for a conversation, oldest
// first.
func (t *Tracker) ByConversation(conversationID string) []Interaction {
	return t.filter(func(in Interaction) bool { return in.ConversationID == conversationID })
}

// ByKind returns the interactions of one kind, oldest first.
func (t *Tracker) ByKind(kind InteractionKind) []Interaction {
	return t.filter(func(in Interaction) bool { return in.Kind == kind })
}

// Len reports how many interactions are pending.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

func (t *Tracker) filter(keep func(Interaction) bool) []Interaction {
	t.mu.Lock()
	var out []Interaction
	for _, in := range t.pending {
		if keep(in) {
			out = append(out, in)
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
