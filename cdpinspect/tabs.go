package cdpinspect

import (
	"context"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/keylock"
)

// DefaultMaxConversations bounds how many conversations' tabs a Provider
// remembers (WithMaxConversations). Beyond it the least recently used
// conversation is forgotten, and that conversation's next call opens a new
// tab; a forgotten tab the agent opened is closed by the Provider's next
// Build in that browser (an adopted user tab stays open).
const DefaultMaxConversations = 4096

// chooseTab sets s.tab for a Build of conversation that asks for req, given
// what the conversation had remembered in this browser run (prev, had) and
// the tabs other conversations remember there (others). fast reports that
// the remembered tab serves the call as it is.
func chooseTab(s *settings, req bb.TabRequest, prev convTab, had bool, others func() map[string]bool) (fast bool, err error) {
	switch req.Want {
	case bb.TabCurrent:
		if had {
			s.tab.targetID = prev.targetID
			return true, nil
		}
		s.tab.open = true
	case bb.TabByID:
		if !had || !prev.holds(req.ID) {
			return false, &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeTargetNotFound, Backend: bb.KindCDPInspect,
				Message: fmt.Sprintf("target %q is not a tab of this conversation", req.ID)}
		}
		s.tab.targetID = req.ID
		return prev.targetID == req.ID, nil
	case bb.TabActive:
		s.tab.exclude = others()
	default:
		s.tab.open = true
	}
	return false, nil
}

// convTab is the tab one conversation works in, with its other tabs.
type convTab struct {
	targetID string
	// owned: the agent opened it (Target.createTarget) or a tab of the
	// conversation did (a popup), so closing the conversation closes it;
	// false for an adopted user tab.
	owned bool
	// opener is the conversation's tab that opened it (a popup), or "".
	opener string
	// others are the conversation's other tabs in this browser run, least
	// recently current first; their others are empty.
	others []convTab
}

// all returns the current tab then the others.
func (t convTab) all() []convTab {
	cur := t
	cur.others = nil
	return append([]convTab{cur}, t.others...)
}

// holds reports whether id is one of the conversation's tabs.
func (t convTab) holds(id string) bool {
	for _, x := range t.all() {
		if x.targetID == id {
			return true
		}
	}
	return false
}

// without returns the tabs of t but id, current first, as one list.
func (t convTab) without(id string) []convTab {
	var out []convTab
	for _, x := range t.all() {
		if x.targetID != id {
			out = append(out, x)
		}
	}
	return out
}

// withCurrent makes cur the current tab of the conversation whose tabs
// were t (had: t is set): the previous current tab joins the others.
func (t convTab) withCurrent(cur convTab, had bool) convTab {
	cur.others = nil
	if !had {
		return cur
	}
	rest := t.without(cur.targetID)
	// Least recently current first: the previous current tab goes last.
	if len(rest) > 0 && rest[0].targetID == t.targetID {
		rest = append(rest[1:], rest[0])
	}
	cur.others = rest
	return cur
}

// promoted is t after its current tab went away: the most recently current
// other tab becomes current; ok is false when none is left.
func (t convTab) promoted() (convTab, bool) {
	if len(t.others) == 0 {
		return convTab{}, false
	}
	last := t.others[len(t.others)-1]
	last.others = append([]convTab(nil), t.others[:len(t.others)-1]...)
	return last, true
}

// tabKey is a conversation in one browser run: the browser WebSocket URL
// carries the browser's id, which a restarted browser changes, so a
// restart leaves every old entry unreachable (and LRU-evicted in time).
type tabKey struct{ browser, conversation string }

// tabRegistry remembers each conversation's CDP target id, bounded (LRU).
// Safe for concurrent use.
type tabRegistry struct {
	tabs *lru.Cache[tabKey, convTab]

	busy keylock.Locks[string] // per conversation, held while a Build picks its tab

	mu sync.Mutex
	// evicted holds the agent's tabs of conversations the LRU bound
	// pushed out, until a Build in their browser closes them. Every
	// change of tabs happens under mu, so the eviction callback (run
	// inside Add and Remove) appends here under mu as well.
	evicted []tabKeyed
	// removing is set while forget and forgetAll remove entries: a removal
	// is not an eviction.
	removing bool
	// closed holds tabs CloseTab closed: the browser may list a target for
	// a moment after Target.closeTarget answered, and such a popup must
	// not be adopted again.
	closed *lru.Cache[string, struct{}]
}

// tabKeyed is an evicted entry.
type tabKeyed struct {
	key tabKey
	tab convTab
}

// maxEvicted bounds evicted: beyond it the oldest are left open.
const maxEvicted = 1024

func newTabRegistry(max int) *tabRegistry {
	if max <= 0 {
		max = DefaultMaxConversations
	}
	r := &tabRegistry{}
	r.closed, _ = lru.New[string, struct{}](maxEvicted)
	r.tabs, _ = lru.NewWithEvict[tabKey, convTab](max, func(k tabKey, t convTab) { // only fails for size <= 0
		for _, x := range t.all() {
			if !r.removing && x.owned && len(r.evicted) < maxEvicted {
				r.evicted = append(r.evicted, tabKeyed{k, x})
			}
		}
	})
	return r
}

// lock serialises the tab choice of one conversation, so that two
// concurrent first calls open one tab, not two. The returned func releases.
func (r *tabRegistry) lock(ctx context.Context, conversation string) (func(), error) {
	unlock, err := r.busy.Lock(ctx, conversation)
	if err != nil {
		return nil, ctxErr(ctx, "", false)
	}
	return unlock, nil
}

func (r *tabRegistry) get(k tabKey) (convTab, bool) { return r.tabs.Get(k) }

func (r *tabRegistry) set(k tabKey, t convTab) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tabs.Add(k, t)
}

func (r *tabRegistry) forget(k tabKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removing = true
	r.tabs.Remove(k)
	r.removing = false
}

// takeEvicted returns, and stops remembering, the target ids of the
// agent's evicted tabs in browser.
func (r *tabRegistry) takeEvicted(browser string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	kept := r.evicted[:0]
	for _, e := range r.evicted {
		if e.key.browser == browser {
			out = append(out, e.tab.targetID)
		} else {
			kept = append(kept, e)
		}
	}
	r.evicted = kept
	return out
}

// has reports whether any browser run remembers a tab for conversation.
func (r *tabRegistry) has(conversation string) bool {
	for _, k := range r.tabs.Keys() {
		if k.conversation == conversation {
			return true
		}
	}
	return false
}

// targetsOf returns the targets remembered in browser for conversations
// other than conversation.
func (r *tabRegistry) targetsOf(browser, conversation string) map[string]bool {
	out := make(map[string]bool)
	for _, k := range r.tabs.Keys() {
		if k.browser != browser || k.conversation == conversation {
			continue
		}
		if t, ok := r.tabs.Peek(k); ok {
			for _, x := range t.all() {
				out[x.targetID] = true
			}
		}
	}
	return out
}

// of returns conversation's tabs in every browser run.
func (r *tabRegistry) of(conversation string) []convTab {
	var out []convTab
	for _, k := range r.tabs.Keys() {
		if k.conversation != conversation {
			continue
		}
		if t, ok := r.tabs.Peek(k); ok {
			out = append(out, t.all()...)
		}
	}
	return out
}

// forgetAll drops conversation's entries of every browser run.
func (r *tabRegistry) forgetAll(conversation string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removing = true
	defer func() { r.removing = false }()
	for _, k := range r.tabs.Keys() {
		if k.conversation == conversation {
			r.tabs.Remove(k)
		}
	}
}

// tabClosedErr is the error of a call whose conversation's remembered tab
// no longer exists. ClassProtocol: it must not fail over (another backend
// would silently act in another browser), and nothing was sent to a page.
func tabClosedErr(targetID string) *bb.Error {
	return &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeTargetNotFound, Method: "Target.attachToTarget",
		Backend: bb.KindCDPInspect,
		Message: fmt.Sprintf("the conversation's tab was closed (target %s); the next call opens a new tab", targetID)}
}
