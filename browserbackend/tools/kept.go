package tools

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
)

// keptKey identifies the Client a conversation keeps between calls
// (Options.KeepClients): the invocation as the selector sees it.
type keptKey struct {
	conversation, iface, actor, target string
	mode                               browserbackend.Mode
}

func keptKeyOf(inv browserbackend.Invocation) keptKey {
	return keptKey{conversation: inv.ConversationID, iface: inv.InterfaceID, actor: inv.ActorPrincipalID,
		target: inv.TargetClientID, mode: inv.Mode}
}

// keptClients holds the Clients of Options.KeepClients, one per keptKey,
// each with the guard watch running on it, if any.
type keptClients struct {
	mu     sync.Mutex
	m      map[keptKey]*keptEntry
	closed bool
}

// keptEntry is one kept Client and its watch.
type keptEntry struct {
	c *browserbackend.Client

	mu sync.Mutex // serialises watch set-up and tear-down
	w  *watch     // nil until a guarded call starts it
}

// watchFor returns the entry's running watch for g, starting it (or
// restarting it for another guard) with ctx bounding the set-up.
func (e *keptEntry) watchFor(ctx context.Context, g *guard.Guard, log *slog.Logger, op string) (*watch, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.w != nil && e.w.g == g {
		return e.w, nil
	}
	if e.w != nil {
		e.w.stop(ctx)
		e.w = nil
	}
	w, err := startWatch(ctx, context.Background(), g, e.c, log, op)
	if err != nil {
		return nil, err
	}
	e.w = w
	return w, nil
}

// close stops the watch and closes the Client.
func (e *keptEntry) close() {
	e.mu.Lock()
	if e.w != nil {
		e.w.stop(context.Background())
		e.w = nil
	}
	e.mu.Unlock()
	_ = e.c.Close()
}

// get returns the kept entry of key, creating it with mk when there is
// none; fresh replaces any kept one (closed here) with a new one. After
// shutdown it returns nil.
func (k *keptClients) get(key keptKey, fresh bool, mk func() *browserbackend.Client) *keptEntry {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	old := k.m[key]
	if old != nil && !fresh {
		k.mu.Unlock()
		return old
	}
	e := &keptEntry{c: mk()}
	if k.m == nil {
		k.m = map[keptKey]*keptEntry{}
	}
	k.m[key] = e
	k.mu.Unlock()
	if old != nil {
		old.close()
	}
	return e
}

// drop closes and forgets e when it is still the kept entry of key.
func (k *keptClients) drop(key keptKey, e *keptEntry) {
	k.mu.Lock()
	if k.m[key] == e {
		delete(k.m, key)
	}
	k.mu.Unlock()
	e.close()
}

// dropConversation closes and forgets every kept entry of conv.
func (k *keptClients) dropConversation(conv string) {
	k.mu.Lock()
	var es []*keptEntry
	for key, e := range k.m {
		if key.conversation == conv {
			es = append(es, e)
			delete(k.m, key)
		}
	}
	k.mu.Unlock()
	for _, e := range es {
		e.close()
	}
}

// shutdown closes every kept entry; later gets keep nothing.
func (k *keptClients) shutdown() {
	k.mu.Lock()
	es := k.m
	k.m, k.closed = nil, true
	k.mu.Unlock()
	for _, e := range es {
		e.close()
	}
}

// brokenClient reports whether a call's error means its Client can serve no
// further call: the backend went away (transport), the Client or its page
// was closed, the target's session is gone, or the conversation's tab is
// (target_not_found: the user closed it). Such a kept Client is dropped,
// and the next call selects afresh.
func brokenClient(err error) bool {
	var be *browserbackend.Error
	return err != nil && (errors.Is(err, browserbackend.ErrTransport) || errors.Is(err, browserbackend.ErrClosed) ||
		errors.Is(err, browserbackend.ErrSessionNotFound) || errors.Is(err, browserbackend.ErrTargetCrashed) ||
		errors.As(err, &be) && be.Code == browserbackend.CodeTargetNotFound)
}

// callClient is the Client one call runs on.
type callClient struct {
	*browserbackend.Client
	// entry is the kept entry the Client belongs to (nil: a per-call Client).
	entry *keptEntry
	key   keptKey
	t     *Tools
}

// done ends the call's use of the Client with the call's error: a per-call
// Client is closed; a kept one is dropped when err says it is broken.
func (c callClient) done(err error) {
	if c.entry == nil {
		c.Close()
		return
	}
	// A Client whose selection failed serves nothing yet: select afresh.
	if brokenClient(err) || (err != nil && c.Kind() == "") {
		c.t.kept.drop(c.key, c.entry)
	}
}

// watch returns the running watch of a kept Client for g, nil for a
// per-call Client (guarded then starts one for the call).
func (c callClient) watch(ctx context.Context, g *guard.Guard, op string) (*watch, error) {
	if c.entry == nil {
		return nil, nil
	}
	return c.entry.watchFor(ctx, g, c.t.log, op)
}

// client returns the Client of one call: the conversation's kept Client
// with Options.KeepClients or Options.Guard (no new connection, target
// attachment or selection per call), replaced when the call asks for
// another tab and dropped after a broken-client error; else a fresh
// per-call Client.
func (t *Tools) client(inv browserbackend.Invocation) callClient {
	if t.keepClients {
		key := keptKeyOf(inv)
		fresh := inv.Tab.Want != browserbackend.TabCurrent
		if e := t.kept.get(key, fresh, func() *browserbackend.Client { return t.sel.Client(inv) }); e != nil {
			return callClient{Client: e.c, entry: e, key: key, t: t}
		}
	}
	return callClient{Client: t.sel.Client(inv), t: t}
}

// Shutdown closes the Clients kept for conversations (Options.KeepClients
// or Options.Guard); later calls use per-call Clients. It is idempotent and
// safe to call concurrently with calls; with neither option it does
// nothing.
func (t *Tools) Shutdown() { t.kept.shutdown() }
