package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy/tabs"
	"github.com/browserchain/browserchain/internal/keylock"
)

// DefaultMaxTabPins bounds how many conversations' extension tabs an
// extension provider remembers; beyond it the least recently used pin is
// dropped (its tab stays open).
const DefaultMaxTabPins = 10000

// tabPin is the extension tab of one (conversation, target client).
type tabPin struct {
	id tabs.ID
	// owned: the conversation opened the tab (closing it closes the tab);
	// false for an adopted user tab.
	owned bool
	// inv is the invocation that pinned it: the actor and client a release
	// must reach.
	inv  browserbackend.Invocation
	used uint64
	// others are the conversation's other tabs at this client (opened by
	// new_tab, or adopted), least recently current first.
	others []tabRef
}

// tabRef is one of a pin's other tabs.
type tabRef struct {
	id    tabs.ID
	owned bool
}

// refs returns the pin's tabs, current first.
func (p tabPin) refs() []tabRef {
	if p.id == 0 {
		return append([]tabRef(nil), p.others...)
	}
	return append([]tabRef{{p.id, p.owned}}, p.others...)
}

// becomes returns the pin with r current; the previous current tab joins
// the others, last.
func (p tabPin) becomes(r tabRef) tabPin {
	var rest []tabRef
	for _, x := range p.others {
		if x.id != r.id {
			rest = append(rest, x)
		}
	}
	if p.id != 0 && p.id != r.id {
		rest = append(rest, tabRef{p.id, p.owned})
	}
	return tabPin{id: r.id, owned: r.owned, inv: p.inv, others: rest}
}

// without returns the pin without tab id; when it was current the most
// recently current other becomes current (id 0 when none is left).
func (p tabPin) without(id tabs.ID) tabPin {
	var rest []tabRef
	for _, x := range p.others {
		if x.id != id {
			rest = append(rest, x)
		}
	}
	p.others = rest
	if p.id == id {
		p.id, p.owned = 0, false
		if n := len(rest); n > 0 {
			p.id, p.owned, p.others = rest[n-1].id, rest[n-1].owned, rest[:n-1]
		}
	}
	return p
}

type pinKey struct{ conversation, client string }

func pinKeyOf(inv browserbackend.Invocation) pinKey {
	return pinKey{conversation: inv.ConversationID, client: inv.TargetClientID}
}

// tabPins remembers each conversation's extension tab, bounded (LRU), and
// serialises the tab choice of one key so that two concurrent first calls of
// a conversation open one tab. Safe for concurrent use.
type tabPins struct {
	mu    sync.Mutex
	m     map[pinKey]*tabPin
	clock uint64
	max   int
	busy  keylock.Locks[pinKey] // held while a Build picks the key's tab
}

func newTabPins(max int) *tabPins {
	if max <= 0 {
		max = DefaultMaxTabPins
	}
	return &tabPins{m: map[pinKey]*tabPin{}, max: max}
}

// lock takes k's lock, honouring ctx; the returned func releases it.
func (t *tabPins) lock(ctx context.Context, k pinKey) (func(), error) {
	unlock, err := t.busy.Lock(ctx, k)
	if err != nil {
		return nil, browserbackend.ContextError(ctx, "", false)
	}
	return unlock, nil
}

func (t *tabPins) get(k pinKey) (tabPin, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[k]
	if !ok {
		return tabPin{}, false
	}
	t.clock++
	p.used = t.clock
	return *p, true
}

func (t *tabPins) set(k pinKey, p tabPin) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	p.used = t.clock
	t.m[k] = &p
	for len(t.m) > t.max {
		var oldest pinKey
		min := ^uint64(0)
		for k, v := range t.m {
			if v.used < min {
				oldest, min = k, v.used
			}
		}
		delete(t.m, oldest)
	}
}

func (t *tabPins) del(k pinKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, k)
}

// takeConversation removes and returns every pin of conversation.
func (t *tabPins) takeConversation(conversation string) []tabPin {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tabPin
	for k, p := range t.m {
		if k.conversation == conversation {
			out = append(out, *p)
			delete(t.m, k)
		}
	}
	return out
}

// tabBackend is an extension backend scoped to the conversation's tab: a
// command without a session runs in the tab (its id in cdpSessionId),
// whatever tab the user or another conversation made active; the
// extension's own Vellum.* methods and commands that name a session pass
// through as given. A caller that moves its commands itself (a successful
// Vellum.createTab, selectTab or attach) moves the conversation's pin with
// them, as the extension moves its sessionless commands; closing the
// conversation's tab unpins it.
type tabBackend struct {
	*ExtensionBackend
	pins *tabPins
	key  pinKey
	inv  browserbackend.Invocation

	mu  sync.Mutex
	tab tabPin
}

var (
	_ browserbackend.BufferedEventSource = (*tabBackend)(nil)
	_ browserbackend.TabScoped           = (*tabBackend)(nil)
	_ browserbackend.DialogWatcher       = (*tabBackend)(nil)
)

// OpenDialog implements browserbackend.DialogWatcher: the dialog open on the
// conversation's tab, as the extension's events for it reported.
func (b *tabBackend) OpenDialog() (browserbackend.Dialog, bool) {
	return b.s.p.events.openDialog(b.ClientID(), b.Tab().ID)
}

// Send implements browserbackend.ScopedClient. A page command for a tab
// with an open dialog fails at once, unsent (see
// browserbackend.DialogWatcher).
func (b *tabBackend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if cmd.SessionID == "" && !wire.IsPseudoMethod(cmd.Method) {
		if d, open := b.OpenDialog(); open {
			if e := browserbackend.DialogBlocks(browserbackend.KindExtension, cmd.Method, d); e != nil {
				return nil, e
			}
		}
	}
	res, err := b.ExtensionBackend.Send(ctx, inTab(cmd, b.Tab().ID))
	if err == nil && cmd.Method == browserbackend.MethodHandleDialog && cmd.SessionID == "" {
		// Answered: the closed event may come after the next command.
		b.s.p.events.forgetDialog(b.ClientID(), b.Tab().ID)
	}
	if err == nil {
		b.follow(cmd, res)
	}
	return res, err
}

// follow moves the pin to the tab a successful tab command of the caller's
// made current.
func (b *tabBackend) follow(cmd browserbackend.Command, res json.RawMessage) {
	var given struct {
		TabID tabs.ID `json:"tabId"`
	}
	switch cmd.Method {
	case wire.MethodCreateTab:
		_ = json.Unmarshal(res, &given)
	case wire.MethodSelectTab, wire.MethodAttach, wire.MethodCloseTab:
		_ = json.Unmarshal(cmd.Params, &given)
	}
	if given.TabID == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case cmd.Method == wire.MethodCloseTab:
		if given.TabID == b.tab.id {
			// The caller closed the conversation's tab: its sessionless
			// commands go where the extension sends them, and the
			// conversation's next Build opens a new tab.
			b.tab = tabPin{}
			b.pins.del(b.key)
		}
	case given.TabID != b.tab.id:
		b.tab = tabPin{id: given.TabID, owned: cmd.Method == wire.MethodCreateTab, inv: b.inv}
		b.pins.set(b.key, b.tab)
	}
}

// inTab names tabID (when not "") as the session of a page command that
// names none.
func inTab(cmd browserbackend.Command, tabID string) browserbackend.Command {
	if cmd.SessionID == "" && tabID != "" && !wire.IsPseudoMethod(cmd.Method) {
		cmd.SessionID = tabID
	}
	return cmd
}

// Tab implements browserbackend.TabScoped.
func (b *tabBackend) Tab() browserbackend.Tab {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tab.tab()
}

// pinTab resolves the tab inv asks for on b (see browserbackend.TabRequest):
// the pinned tab, attached again; a new tab (Vellum.createTab, active, so that
// it renders; the tab it replaces is closed when the conversation opened it);
// the user's active tab; or the pinned tab by id. A pinned tab that is gone
// is replaced by a new tab of the conversation's own (by id it is
// target_not_found, no failover).
func (t *tabPins) pinTab(ctx context.Context, b *ExtensionBackend, inv browserbackend.Invocation) (*tabBackend, error) {
	pin, err := t.resolve(ctx, b, b.s.p.log, inv)
	if err != nil {
		return nil, err
	}
	return &tabBackend{ExtensionBackend: b, pins: t, key: pinKeyOf(inv), inv: inv, tab: pin}, nil
}

// resolve is pinTab on any sender of the extension's commands. A tab the
// conversation had before (new_tab, use_active_tab, a selection) stays one
// of its tabs, closed with it when it opened it.
func (t *tabPins) resolve(ctx context.Context, b tabs.Sender, log *slog.Logger, inv browserbackend.Invocation) (tabPin, error) {
	key := pinKeyOf(inv)
	unlock, err := t.lock(ctx, key)
	if err != nil {
		return tabPin{}, err
	}
	defer unlock()
	prev, had := t.get(key)
	var next tabPin
	switch inv.Tab.Want {
	case browserbackend.TabByID:
		r, ok := prev.holds(inv.Tab.ID)
		if !had || !ok {
			return tabPin{}, notConversationTab(inv.Tab.ID)
		}
		if err := tabs.Attach(ctx, b, r.id); err != nil {
			if tabGone(err) {
				t.set(key, prev.without(r.id))
			}
			return tabPin{}, t.attachFailed(key, tabPin{}, err)
		}
		next = prev.becomes(r)
		t.set(key, next)
		return next, nil
	case browserbackend.TabCurrent:
		for had && prev.id != 0 {
			err := tabs.Attach(ctx, b, prev.id)
			if err == nil {
				return prev, nil
			}
			if !tabGone(err) {
				return tabPin{}, t.attachFailed(key, prev, err)
			}
			// Closed by the user or with the browser: the tab used
			// before it, or a new tab of the conversation's own.
			prev = prev.without(prev.id)
			t.set(key, prev)
		}
		next, err = openTab(ctx, b, log)
	case browserbackend.TabActive:
		next, err = activeTab(ctx, b)
	default:
		next, err = openTab(ctx, b, log)
	}
	if err != nil {
		return tabPin{}, err
	}
	prev.inv = inv
	next = prev.becomes(tabRef{next.id, next.owned})
	t.set(key, next)
	return next, nil
}

// holds returns the pin's tab named by id (a decimal tab id).
func (p tabPin) holds(id string) (tabRef, bool) {
	for _, r := range p.refs() {
		if strconv.Itoa(int(r.id)) == id {
			return r, true
		}
	}
	return tabRef{}, false
}

func (p tabPin) tab() browserbackend.Tab {
	if p.id == 0 {
		return browserbackend.Tab{}
	}
	return browserbackend.Tab{ID: strconv.Itoa(int(p.id)), Owned: p.owned}
}

// attachFailed forgets a pinned tab the extension no longer has.
func (t *tabPins) attachFailed(key pinKey, prev tabPin, err error) error {
	if !tabGone(err) {
		return err
	}
	if prev.id != 0 {
		t.del(key)
	}
	return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeTargetNotFound,
		Method: wire.MethodAttach, Backend: browserbackend.KindExtension, Dispatched: true,
		Message: "the conversation's tab was closed; the next call opens a new tab", Err: err}
}

// openTab opens an active about:blank tab and attaches to it; the page is
// then loaded through Page.navigate with its load events, as on every other
// backend.
func openTab(ctx context.Context, b tabs.Sender, log *slog.Logger) (tabPin, error) {
	tab, err := tabs.Create(ctx, b, "about:blank", true)
	if err != nil {
		return tabPin{}, err
	}
	if err := tabs.Attach(ctx, b, tab.ID); err != nil {
		if cerr := tabs.Close(ctx, b, tab.ID); cerr != nil {
			log.Warn("hostproxy: closing the tab that could not be attached failed", "tabId", tab.ID, "error", cerr)
		}
		return tabPin{}, err
	}
	return tabPin{id: tab.ID, owned: true}, nil
}

// activeTab adopts the user's active tab.
func activeTab(ctx context.Context, b tabs.Sender) (tabPin, error) {
	list, err := tabs.List(ctx, b)
	if err != nil {
		return tabPin{}, err
	}
	for _, tab := range list {
		if tab.Active {
			if err := tabs.Attach(ctx, b, tab.ID); err != nil {
				return tabPin{}, err
			}
			return tabPin{id: tab.ID}, nil
		}
	}
	return tabPin{}, &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeTargetNotFound,
		Method: wire.MethodListTabs, Backend: browserbackend.KindExtension, Dispatched: true,
		Message: "the browser reports no active tab"}
}

func notConversationTab(id string) error {
	return &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeTargetNotFound,
		Backend: browserbackend.KindExtension, Message: "tab " + strconv.Quote(id) + " is not a tab of this conversation"}
}

// tabGone reports whether err says the extension tab no longer exists: a
// CDP-style protocol error ("no tab with id") or cdp_session_not_found.
func tabGone(err error) bool {
	return err != nil && (errors.Is(err, browserbackend.ErrSessionNotFound) ||
		(errors.Is(err, browserbackend.ErrProtocol) && errors.Is(err, browserbackend.ErrServerError)))
}

// release lets go of every tab of conversation: a tab the conversation
// opened is closed when closing, every other one detached (it stays open).
// newSender returns the extension backend of an invocation; release closes
// it.
func (t *tabPins) release(ctx context.Context, newSender func(browserbackend.Invocation) browserbackend.ScopedClient, conversation string, closing bool) ([]browserbackend.Released, error) {
	var out []browserbackend.Released
	var errs []error
	for _, pin := range t.takeConversation(conversation) {
		b := newSender(pin.inv)
		for _, ref := range pin.refs() {
			r := browserbackend.Released{Kind: browserbackend.KindExtension, Tab: tabPin{id: ref.id, owned: ref.owned}.tab()}
			var err error
			if closing && ref.owned {
				err = tabs.Close(ctx, b, ref.id)
				r.Closed = err == nil
			} else {
				err = tabs.Detach(ctx, b, ref.id)
			}
			if tabGone(err) {
				err, r.Gone = nil, true
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, r)
		}
		_ = b.Close()
	}
	return out, errors.Join(errs...)
}

// pinsOf returns the keys and pins of conversation.
func (t *tabPins) pinsOf(conversation string) map[pinKey]tabPin {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[pinKey]tabPin{}
	for k, p := range t.m {
		if k.conversation == conversation {
			out[k] = *p
		}
	}
	return out
}

// list returns the conversation's tabs at every extension client, current
// first, forgetting those the extension no longer has (Vellum.listTabs).
func (t *tabPins) list(ctx context.Context, newSender func(browserbackend.Invocation) browserbackend.ScopedClient, conversation string) ([]browserbackend.TabInfo, error) {
	var out []browserbackend.TabInfo
	for key := range t.pinsOf(conversation) {
		tabsOf, err := t.listKey(ctx, newSender, key)
		if err != nil {
			return nil, err
		}
		out = append(out, tabsOf...)
	}
	return out, nil
}

func (t *tabPins) listKey(ctx context.Context, newSender func(browserbackend.Invocation) browserbackend.ScopedClient, key pinKey) ([]browserbackend.TabInfo, error) {
	unlock, err := t.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	pin, ok := t.get(key)
	if !ok {
		return nil, nil
	}
	b := newSender(pin.inv)
	all, err := tabs.List(ctx, b)
	_ = b.Close()
	if err != nil {
		return nil, err
	}
	byID := make(map[tabs.ID]tabs.Tab, len(all))
	for _, tb := range all {
		byID[tb.ID] = tb
	}
	for _, r := range pin.refs() {
		if _, open := byID[r.id]; !open {
			pin = pin.without(r.id)
		}
	}
	if pin.id == 0 {
		t.del(key)
		return nil, nil
	}
	t.set(key, pin)
	var out []browserbackend.TabInfo
	for i, r := range pin.refs() {
		tb := byID[r.id]
		out = append(out, browserbackend.TabInfo{Tab: tabPin{id: r.id, owned: r.owned}.tab(), URL: tb.URL, Title: tb.Title, Current: i == 0})
	}
	return out, nil
}

// closeTab closes the conversation's tab id (Vellum.closeTab) when the
// conversation opened it, else detaches it, and forgets it.
func (t *tabPins) closeTab(ctx context.Context, newSender func(browserbackend.Invocation) browserbackend.ScopedClient, conversation, id string) (browserbackend.Released, error) {
	for key, pin := range t.pinsOf(conversation) {
		if _, ok := pin.holds(id); !ok {
			continue
		}
		unlock, err := t.lock(ctx, key)
		if err != nil {
			return browserbackend.Released{}, err
		}
		defer unlock()
		pin, _ = t.get(key)
		r, ok := pin.holds(id)
		if !ok {
			break
		}
		b := newSender(pin.inv)
		rel := browserbackend.Released{Kind: browserbackend.KindExtension, Tab: tabPin{id: r.id, owned: r.owned}.tab()}
		if r.owned {
			err = tabs.Close(ctx, b, r.id)
			rel.Closed = err == nil
		} else {
			err = tabs.Detach(ctx, b, r.id)
		}
		_ = b.Close()
		if tabGone(err) {
			err, rel.Gone = nil, true
		}
		if err != nil {
			return browserbackend.Released{}, err
		}
		if pin = pin.without(r.id); pin.id == 0 {
			t.del(key)
		} else {
			t.set(key, pin)
		}
		return rel, nil
	}
	return browserbackend.Released{}, notConversationTab(id)
}
