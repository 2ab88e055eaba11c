package hostproxy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// Event routing. Every backend bound to a client is a listener of that
// client. A listener claims the tabs its commands name: each cdpSessionId it
// sends (a tab id in decimal digits, a CDP target id or a flat child session
// id). An event is routed to an owner — one such claim — when it can be
// attributed, and only to the listeners that claim it; the rule is
// documented in doc.go ("Events and tabs").

// eventRouter is the Proxy's event adapter: it charges a client's events to
// its budget, attributes them to tabs and hands them to the backends
// listening to that client, here and, through the relay, on other replicas.
// Safe for concurrent use.
type eventRouter struct {
	hub    eventhub.Hub
	log    *slog.Logger
	relay  Relay // nil: one process
	budget *eventBudget
	// attr ties frame, session, request and context ids to tabs;
	// unattributed counts events withheld because nothing tied them to a
	// tab while several conversations listened.
	attr         attributions
	unattributed atomic.Uint64

	// dialogs is the JavaScript dialog open on each tab, as the tab's
	// events report it, by client and tab.
	dialogs *lru.Cache[dialogKey, browserbackend.Dialog]

	mu        sync.Mutex
	listeners map[string]map[*listener]struct{}
}

type dialogKey struct{ client, tab string }

// maxOpenDialogs bounds the tabs with an open dialog the router remembers.
const maxOpenDialogs = 4096

func newEventRouter(hub eventhub.Hub, log *slog.Logger, relay Relay, budget *eventBudget) *eventRouter {
	dialogs, _ := lru.New[dialogKey, browserbackend.Dialog](maxOpenDialogs)
	return &eventRouter{hub: hub, log: log, relay: relay, budget: budget, attr: newAttributions(),
		dialogs: dialogs, listeners: make(map[string]map[*listener]struct{})}
}

// noteDialog keeps the open dialog of tab (an event's owner) from its events.
func (r *eventRouter) noteDialog(clientID, tab string, ev browserbackend.Event) {
	switch ev.Method {
	case browserbackend.MethodDialogOpening:
		var d browserbackend.Dialog
		if json.Unmarshal(ev.Params, &d) == nil {
			r.dialogs.Add(dialogKey{clientID, tab}, d)
		}
	case browserbackend.MethodDialogClosed, browserbackend.MethodTargetDetached:
		r.forgetDialog(clientID, tab)
	}
}

// forgetDialog drops tab's dialog once it was answered (its closed event
// may come after the tab's next command).
func (r *eventRouter) forgetDialog(clientID, tab string) {
	r.dialogs.Remove(dialogKey{clientID, tab})
}

// openDialog returns the dialog open on tab of clientID, as its events
// reported it.
func (r *eventRouter) openDialog(clientID, tab string) (browserbackend.Dialog, bool) {
	if clientID == "" || tab == "" {
		return browserbackend.Dialog{}, false
	}
	return r.dialogs.Get(dialogKey{clientID, tab})
}

// check refuses an event of clientID that actor may not post: the client
// must be connected (404 unknown_client) under actor (403 wrong_actor).
func (r *eventRouter) check(clientID, actor string) *refusal {
	info, ok := r.hub.Client(clientID)
	if !ok {
		return &refusal{http.StatusNotFound, "unknown_client", fmt.Sprintf("client %q is not connected", clientID)}
	}
	if info.ActorPrincipalID != "" && info.ActorPrincipalID != actor {
		return &refusal{http.StatusForbidden, "wrong_actor", fmt.Sprintf("client %q belongs to another actor", clientID)}
	}
	return nil
}

// accept delivers ev, an event of clientID whose client and actor were
// checked, naming tab (decimal digits, or ""; see EventBody.Tab). With
// budgeted it is charged to the client's event budget first and refused 429
// events_shed over it (route names the transport in the shed warning). It
// counts as activity of the client and goes to the relay too.
func (r *eventRouter) accept(clientID string, ev browserbackend.Event, tab string, budgeted bool, route string) *refusal {
	if budgeted {
		if ok, logNow, n := r.budget.allow(clientID); !ok {
			if logNow {
				r.log.Warn("host_browser events shed over the client's event budget",
					"route", route, "clientId", clientID, "shed", n, "shedTotal", r.budget.shed.Load())
			}
			return &refusal{http.StatusTooManyRequests, "events_shed", "event budget exceeded; the event was dropped"}
		}
	}
	r.hub.Touch(clientID)
	if tab != "" && ev.SessionID != tab {
		// A child session's event that also names its tab.
		r.attr.set(clientID, attrSession, ev.SessionID, tab)
	}
	r.publish(clientID, ev)
	if r.relay != nil {
		r.relay.RelayEvent(clientID, ev)
	}
	return nil
}

// listen makes bus a listener of clientID's events for a backend serving
// conversation, until the returned func is called.
func (r *eventRouter) listen(clientID, conversation string, bus *browserbackend.EventBus) (*listener, func()) {
	l := &listener{bus: bus, conversation: conversation}
	r.mu.Lock()
	set := r.listeners[clientID]
	if set == nil {
		set = make(map[*listener]struct{})
		r.listeners[clientID] = set
	}
	set[l] = struct{}{}
	r.mu.Unlock()
	return l, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if set := r.listeners[clientID]; set != nil {
			delete(set, l)
			if len(set) == 0 {
				delete(r.listeners, clientID)
			}
		}
	}
}

// publish delivers ev to the listeners of clientID it belongs to (see
// routeEvent) and learns the ids it ties to its tab. It never blocks.
func (r *eventRouter) publish(clientID string, ev browserbackend.Event) {
	var ids eventIDs
	if len(ev.Params) > 0 {
		_ = json.Unmarshal(ev.Params, &ids) // the decoder checked it is JSON
	}
	r.attr.set(clientID, attrSeen, "-", "yes")
	if ev.SessionID == "" {
		r.attr.set(clientID, attrAnon, "-", "yes")
	}
	owners, attributed := r.attr.attribute(clientID, ev, &ids)
	if attributed {
		r.attr.learnEvent(clientID, owners[0], ev, &ids)
		r.noteDialog(clientID, owners[0], ev)
	}
	r.mu.Lock()
	ls := make([]*listener, 0, len(r.listeners[clientID]))
	for l := range r.listeners[clientID] {
		ls = append(ls, l)
	}
	r.mu.Unlock()
	to, withheld := routeEvent(ls, owners, attributed)
	if withheld {
		r.unattributed.Add(1)
	}
	for _, l := range to {
		l.bus.Publish(ev) // never blocks
	}
}

// maxAttributions bounds the proxy's memory of frame, session, request and
// execution-context ids it has tied to a tab (all clients together).
const maxAttributions = 16384

// listener is one backend's subscription to its client's events.
type listener struct {
	bus          *browserbackend.EventBus
	conversation string

	mu     sync.Mutex
	claims map[string]struct{}
}

// claim records that the backend's commands name owner; it reports whether
// the claim is new.
func (l *listener) claim(owner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.claims[owner]; ok {
		return false
	}
	if l.claims == nil {
		l.claims = make(map[string]struct{})
	}
	l.claims[owner] = struct{}{}
	return true
}

// state reports whether l claims one of owners and whether it claims
// anything.
func (l *listener) state(owners []string) (owns, any bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range owners {
		if _, ok := l.claims[o]; ok {
			return true, true
		}
	}
	return false, len(l.claims) > 0
}

// attrKind is what an attribution id is.
type attrKind uint8

const (
	attrFrame   attrKind = iota + 1 // a frame id (a tab's main frame id is its target id)
	attrSession                     // a flat child session id
	attrRequest                     // a Network requestId
	attrContext                     // a Runtime executionContextId
	attrProbed                      // a claim whose target id was asked for (id = the claim)
	attrAnon                        // the client posts events that name no tab (id "-")
	attrSeen                        // the client has posted an event (id "-")
)

type attrKey struct {
	client string
	kind   attrKind
	id     string
}

// ambiguous marks an id seen in two tabs (execution context ids are only
// unique per renderer): events naming it are not attributed.
const ambiguous = "\x00ambiguous"

// attributions is the proxy's bounded memory of which tab owns an id.
type attributions struct{ c *lru.Cache[attrKey, string] }

func newAttributions() attributions {
	c, _ := lru.New[attrKey, string](maxAttributions) // fails only for size <= 0
	return attributions{c}
}

func (a attributions) get(client string, kind attrKind, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	owner, ok := a.c.Get(attrKey{client, kind, id})
	if !ok || owner == ambiguous {
		return "", false
	}
	return owner, true
}

func (a attributions) set(client string, kind attrKind, id, owner string) {
	if id == "" || owner == "" {
		return
	}
	k := attrKey{client, kind, id}
	if kind == attrContext {
		if old, ok := a.c.Peek(k); ok && old != owner {
			owner = ambiguous
		}
	}
	a.c.Add(k, owner)
}

// eventIDs are the fields of CDP event params (and command results) that
// tie them to a tab.
type eventIDs struct {
	FrameID       string `json:"frameId"`
	ParentFrameID string `json:"parentFrameId"`
	Frame         *struct {
		ID       string `json:"id"`
		ParentID string `json:"parentId"`
	} `json:"frame"`
	FrameTree *struct {
		Frame struct {
			ID string `json:"id"`
		} `json:"frame"`
	} `json:"frameTree"`
	TargetID   string `json:"targetId"`
	TargetInfo *struct {
		TargetID string `json:"targetId"`
	} `json:"targetInfo"`
	SessionID          string          `json:"sessionId"`
	RequestID          string          `json:"requestId"`
	ExecutionContextID json.RawMessage `json:"executionContextId"`
	Context            *struct {
		ID      json.RawMessage `json:"id"`
		AuxData struct {
			FrameID string `json:"frameId"`
		} `json:"auxData"`
	} `json:"context"`
}

// isTabID reports whether s is a tab id (decimal digits).
func isTabID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// attribute returns the owners of ev on clientID: the session the event
// names and the tab that session belongs to, else the tab a frame, request
// or execution context id in its params is known to belong to. ok is false
// when nothing ties the event to a tab. owners[0] is the one to learn ids
// for.
func (a attributions) attribute(clientID string, ev browserbackend.Event, ids *eventIDs) (owners []string, ok bool) {
	if ev.SessionID != "" {
		if o, ok := a.get(clientID, attrSession, ev.SessionID); ok {
			return []string{o, ev.SessionID}, true
		}
		return []string{ev.SessionID}, true
	}
	if ev.Method == browserbackend.MethodTargetDetached && isTabID(ids.TargetID) {
		return []string{ids.TargetID}, true // the real extension's invalidation names the tab
	}
	frames := []string{ids.FrameID, ids.ParentFrameID}
	if ids.Frame != nil {
		frames = append(frames, ids.Frame.ID, ids.Frame.ParentID)
	}
	if ids.Context != nil {
		frames = append(frames, ids.Context.AuxData.FrameID)
	}
	if !isTargetMethod(ev.Method) {
		frames = append(frames, ids.TargetID)
	}
	for _, f := range frames {
		if o, ok := a.get(clientID, attrFrame, f); ok {
			return []string{o}, true
		}
	}
	if o, ok := a.get(clientID, attrRequest, ids.RequestID); ok {
		return []string{o}, true
	}
	if o, ok := a.get(clientID, attrContext, string(ids.ExecutionContextID)); ok {
		return []string{o}, true
	}
	return nil, false
}

// isTargetMethod reports whether method is of the Target domain, whose
// target ids name other targets than the one the event came from.
func isTargetMethod(method string) bool {
	return len(method) > 7 && method[:7] == "Target."
}

// learnEvent remembers the ids an event attributed to owner introduces: its
// frames, Network requests, execution contexts and child sessions.
func (a attributions) learnEvent(clientID, owner string, ev browserbackend.Event, ids *eventIDs) {
	switch {
	case ev.Method == "Target.attachedToTarget":
		a.set(clientID, attrSession, ids.SessionID, owner)
		return
	case isTargetMethod(ev.Method):
		return
	}
	a.set(clientID, attrFrame, ids.FrameID, owner)
	if ids.Frame != nil {
		a.set(clientID, attrFrame, ids.Frame.ID, owner)
	}
	a.set(clientID, attrRequest, ids.RequestID, owner)
	if ids.Context != nil {
		a.set(clientID, attrFrame, ids.Context.AuxData.FrameID, owner)
		a.set(clientID, attrContext, string(ids.Context.ID), owner)
	}
}

// learnResult remembers what the answer to a command sent to owner says
// about owner's tab: the main frame Page.navigate and Page.getFrameTree
// name, the target Target.getTargetInfo names, the child session
// Target.attachToTarget opened.
func (a attributions) learnResult(clientID, owner, method string, params, res json.RawMessage) {
	if owner == "" || len(res) == 0 || res[0] != '{' {
		return
	}
	var ids eventIDs
	if json.Unmarshal(res, &ids) != nil {
		return
	}
	switch method {
	case "Page.navigate":
		a.set(clientID, attrFrame, ids.FrameID, owner)
	case "Page.getFrameTree":
		if ids.FrameTree != nil {
			a.set(clientID, attrFrame, ids.FrameTree.Frame.ID, owner)
		}
	case "Target.getTargetInfo":
		var p struct {
			TargetID string `json:"targetId"`
		}
		if json.Unmarshal(params, &p); p.TargetID == "" && ids.TargetInfo != nil {
			a.set(clientID, attrFrame, ids.TargetInfo.TargetID, owner)
		}
	case "Target.attachToTarget":
		a.set(clientID, attrSession, ids.SessionID, owner)
	}
}

// routeEvent picks the listeners of one client that receive an event:
// attributed to owners, those that claim one of them, or, when none does, those
// that claim no tab at all (their commands name none, so the server cannot
// tell their tab); not attributed, every listener when they all serve one
// conversation, else none. It reports whether the event was withheld from
// every listener because it could not be attributed.
func routeEvent(ls []*listener, owners []string, attributed bool) (out []*listener, unattributed bool) {
	if attributed {
		var tabless []*listener
		for _, l := range ls {
			owns, any := l.state(owners)
			switch {
			case owns:
				out = append(out, l)
			case !any:
				tabless = append(tabless, l)
			}
		}
		if len(out) == 0 {
			out = tabless
		}
		return out, false
	}
	for _, l := range ls[min(1, len(ls)):] {
		if l.conversation != ls[0].conversation {
			return nil, true
		}
	}
	return ls, false
}
