package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub"
)

// fakeHub is a unit-test Hub: ClientID publishes land on a per-client
// channel as decoded JSON objects.
type fakeHub struct {
	mu         sync.Mutex
	clients    map[string]*fakeClient
	changed    chan struct{}
	publishErr error
	touched    []string
	retracted  []string
}

type fakeClient struct {
	info eventhub.ClientInfo
	gone chan struct{}
	msgs chan map[string]any
}

func newFakeHub() *fakeHub {
	return &fakeHub{clients: map[string]*fakeClient{}, changed: make(chan struct{})}
}

func (h *fakeHub) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// add connects a client; lastActive orders the roster.
func (h *fakeHub) add(id, iface, actor string, lastActive time.Time) *fakeClient {
	caps := eventhub.Capabilities(iface)
	c := &fakeClient{
		info: eventhub.ClientInfo{ClientID: id, InterfaceID: iface, Capabilities: caps,
			ActorPrincipalID: actor, LastActive: lastActive, ConnectedAt: lastActive},
		gone: make(chan struct{}),
		msgs: make(chan map[string]any, 256),
	}
	h.mu.Lock()
	h.clients[id] = c
	h.notifyLocked()
	h.mu.Unlock()
	return c
}

func (h *fakeHub) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[id]; ok {
		close(c.gone)
		delete(h.clients, id)
		h.notifyLocked()
	}
}

func (h *fakeHub) Publish(ctx context.Context, t eventhub.Target, conv string, msg any) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.publishErr != nil {
		return "", h.publishErr
	}
	c, ok := h.clients[t.ClientID]
	if t.ClientID == "" || !ok {
		return "", eventhub.ErrNotConnected
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	select {
	case c.msgs <- m:
	default:
		return "", errors.New("fake hub: client queue full")
	}
	return "ev", nil
}

func (h *fakeHub) Roster() []eventhub.ClientInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]eventhub.ClientInfo, 0, len(h.clients))
	for _, c := range h.clients {
		out = append(out, c.info)
	}
	return out // deliberately unsorted: the proxy must not rely on order
}

func (h *fakeHub) Client(id string) (eventhub.ClientInfo, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.clients[id]
	if !ok {
		return eventhub.ClientInfo{}, false
	}
	return c.info, true
}

func (h *fakeHub) Touch(id string) {
	h.mu.Lock()
	h.touched = append(h.touched, id)
	h.mu.Unlock()
}

func (h *fakeHub) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func (h *fakeHub) Gone(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[id]; ok {
		return c.gone
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Retract records the id; the fake hub has no replay, so no reconnect ever
// holds a request.
func (h *fakeHub) Retract(_ context.Context, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retracted = append(h.retracted, id)
	return false, nil
}

var _ eventhub.Hub = (*fakeHub)(nil)

// next returns the next message published to c; it fails the test if none
// arrives (the guard only bounds a broken test).
func (c *fakeClient) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no message published to %s", c.info.ClientID)
		return nil
	}
}

// empty fails the test if c has a queued message.
func (c *fakeClient) empty(t testing.TB) {
	t.Helper()
	select {
	case m := <-c.msgs:
		t.Fatalf("unexpected message to %s: %v", c.info.ClientID, m)
	default:
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
