package custombackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/browserchain/browserchain/browserbackend"
)

// BrowserKind is the kind of a farm worker that is a real Chromium.
const BrowserKind browserbackend.Kind = "farm-chromium"

// BrowserDescriptor declares a worker that is a real Chromium: besides
// sending commands it resolves the invocation's tab (CapTabs) and runs
// browser-level commands, so a guard can hold the windows a page opens
// before their first request (CapHoldTargets). The layers above the core
// read these capabilities; nothing there names this kind.
var BrowserDescriptor = browserbackend.Descriptor{
	Kind:      BrowserKind,
	Mode:      "farm-chromium",
	Transport: "cdp-ws",
	Caps:      browserbackend.CapTabs | browserbackend.CapHoldTargets,
}

// BrowserProvider proposes one Chromium reached at its DevTools WebSocket
// URL. Every Build dials a connection of its own and attaches to the
// conversation's tab: a tab it opened for the conversation
// (Target.createTarget), or the tab the invocation asks for. It remembers
// one tab per conversation; ReleaseConversation closes or forgets them. Safe
// for concurrent use.
type BrowserProvider struct {
	wsURL string

	mu   sync.Mutex
	tabs map[string]browserbackend.Tab // by conversation
	busy map[string]chan struct{}      // one Build picks a conversation's tab at a time
}

// NewBrowserProvider returns the provider of the Chromium at wsURL (its
// browser target's ws:// URL).
func NewBrowserProvider(wsURL string) *BrowserProvider {
	return &BrowserProvider{wsURL: wsURL, tabs: map[string]browserbackend.Tab{}, busy: map[string]chan struct{}{}}
}

// Describe implements browserbackend.Provider.
func (p *BrowserProvider) Describe() browserbackend.Descriptor { return BrowserDescriptor }

// Propose implements browserbackend.Provider: always a candidate.
func (p *BrowserProvider) Propose(inv browserbackend.Invocation, _ browserbackend.Env) (browserbackend.Candidate, error) {
	return browserbackend.Candidate{
		Reason: "farm chromium configured",
		Build:  func(ctx context.Context) (browserbackend.ScopedClient, error) { return p.build(ctx, inv) },
	}, nil
}

func (p *BrowserProvider) build(ctx context.Context, inv browserbackend.Invocation) (browserbackend.ScopedClient, error) {
	unlock, err := p.lock(ctx, inv.ConversationID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := dial(ctx, p.wsURL)
	if err != nil {
		return nil, err
	}
	tab, err := p.choose(ctx, c, inv)
	if err == nil {
		err = c.attach(ctx, tab)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// choose returns the tab inv asks for and remembers it for the conversation.
func (p *BrowserProvider) choose(ctx context.Context, c *conn, inv browserbackend.Invocation) (browserbackend.Tab, error) {
	p.mu.Lock()
	cur, had := p.tabs[inv.ConversationID]
	p.mu.Unlock()
	switch inv.Tab.Want {
	case browserbackend.TabCurrent:
		if had {
			return cur, nil
		}
	case browserbackend.TabByID:
		if !had || cur.ID != inv.Tab.ID {
			return browserbackend.Tab{}, &browserbackend.Error{Class: browserbackend.ClassPolicy,
				Code: browserbackend.CodeTargetNotFound, Backend: BrowserKind, Message: "not a tab of this conversation"}
		}
		return cur, nil
	case browserbackend.TabActive:
		return browserbackend.Tab{}, &browserbackend.Error{Class: browserbackend.ClassPolicy,
			Code: browserbackend.CodeNotSupported, Backend: BrowserKind, Message: "a farm browser has no user tabs"}
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "Target.createTarget", map[string]any{"url": "about:blank"}, "", &created); err != nil {
		return browserbackend.Tab{}, err
	}
	tab := browserbackend.Tab{ID: created.TargetID, Owned: true}
	if had && cur.Owned {
		_ = c.call(ctx, "Target.closeTarget", map[string]string{"targetId": cur.ID}, "", nil)
	}
	p.mu.Lock()
	p.tabs[inv.ConversationID] = tab
	p.mu.Unlock()
	return tab, nil
}

// ReleaseConversation implements browserbackend.ConversationReleaser:
// closing closes the conversation's tab; otherwise it is forgotten and
// stays open.
func (p *BrowserProvider) ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]browserbackend.Released, error) {
	p.mu.Lock()
	tab, had := p.tabs[conversationID]
	delete(p.tabs, conversationID)
	p.mu.Unlock()
	if !had {
		return nil, nil
	}
	r := browserbackend.Released{Kind: BrowserKind, Tab: tab}
	if !close {
		return []browserbackend.Released{r}, nil
	}
	c, err := dial(ctx, p.wsURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out struct {
		Success bool `json:"success"`
	}
	if err := c.call(ctx, "Target.closeTarget", map[string]string{"targetId": tab.ID}, "", &out); err != nil {
		var e *browserbackend.Error
		if !errors.As(err, &e) || e.Class != browserbackend.ClassProtocol {
			return nil, err
		}
		r.Gone = true
	}
	r.Closed = !r.Gone
	return []browserbackend.Released{r}, nil
}

func (p *BrowserProvider) lock(ctx context.Context, conversation string) (func(), error) {
	for {
		p.mu.Lock()
		held, ok := p.busy[conversation]
		if !ok {
			mine := make(chan struct{})
			p.busy[conversation] = mine
			p.mu.Unlock()
			return func() {
				p.mu.Lock()
				delete(p.busy, conversation)
				p.mu.Unlock()
				close(mine)
			}, nil
		}
		p.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, browserbackend.ContextError(ctx, "", false)
		}
	}
}

// conn is one DevTools WebSocket with a page session attached: the backend
// of one invocation. Commands without a session run in the page, commands
// on browserbackend.BrowserSessionID at browser level, others on the
// session they name. Every event of the connection is published with its
// session.
type conn struct {
	ws      *websocket.Conn
	ctx     context.Context // ends the reader
	cancel  context.CancelFunc
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan reply
	err     error // why the connection ended; set once
	bus     browserbackend.EventBus
	session string
	tab     browserbackend.Tab
	done    chan struct{}
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

var (
	_ browserbackend.EventSource = (*conn)(nil)
	_ browserbackend.TabScoped   = (*conn)(nil)
)

func dial(ctx context.Context, wsURL string) (*conn, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, browserbackend.TransportError(browserbackend.CodeUnreachable, "cannot reach the farm browser", err)
	}
	ws.SetReadLimit(64 << 20)
	c := &conn{ws: ws, pending: map[int64]chan reply{}, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.read()
	return c, nil
}

func (c *conn) read() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(c.ctx)
		if err != nil {
			c.end(browserbackend.TransportError(browserbackend.CodeTransportError, "farm browser connection ended", err))
			return
		}
		var f struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
			SessionID string          `json:"sessionId"`
			reply
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		if f.Method != "" {
			ev := browserbackend.Event{Method: f.Method, Params: f.Params, SessionID: f.SessionID}
			if f.Method == browserbackend.MethodTargetDetached {
				var p struct {
					SessionID string `json:"sessionId"`
				}
				if json.Unmarshal(f.Params, &p) == nil {
					ev.SessionID = p.SessionID
				}
			}
			c.bus.Publish(ev)
			continue
		}
		c.mu.Lock()
		ch := c.pending[f.ID]
		delete(c.pending, f.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- f.reply
		}
	}
}

// end fails every pending command with err and closes the subscriptions.
func (c *conn) end(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	pending := c.pending
	c.pending = map[int64]chan reply{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	c.bus.Close()
}

// call sends method on session ("" is the browser) and decodes the result
// into out (when not nil).
func (c *conn) call(ctx context.Context, method string, params any, session string, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	res, err := c.send(ctx, method, raw, session)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(res, out)
}

func (c *conn) send(ctx context.Context, method string, params json.RawMessage, session string) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	frame, _ := json.Marshal(struct {
		ID        int64           `json:"id"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params,omitempty"`
		SessionID string          `json:"sessionId,omitempty"`
	}{id, method, params, session})
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, browserbackend.Classify(err, false)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			return nil, c.err
		}
		if r.Error != nil {
			return nil, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeCDPError,
				CDPCode: r.Error.Code, Method: method, Backend: BrowserKind, Dispatched: true, Message: r.Error.Message}
		}
		return r.Result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, browserbackend.ContextError(ctx, method, true)
	}
}

// attach attaches a flat session to tab; the page's commands run on it.
func (c *conn) attach(ctx context.Context, tab browserbackend.Tab) error {
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "Target.attachToTarget", map[string]any{"targetId": tab.ID, "flatten": true}, "", &att); err != nil {
		return err
	}
	c.session, c.tab = att.SessionID, tab
	return nil
}

// Send implements browserbackend.ScopedClient.
func (c *conn) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	session := cmd.SessionID
	switch session {
	case "":
		session = c.session
	case browserbackend.BrowserSessionID:
		session = ""
	}
	return c.send(ctx, cmd.Method, cmd.Params, session)
}

// Subscribe implements browserbackend.EventSource.
func (c *conn) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return c.bus.Subscribe(method)
}

// Tab implements browserbackend.TabScoped.
func (c *conn) Tab() browserbackend.Tab { return c.tab }

// Close implements browserbackend.ScopedClient: the connection ends, its
// session with it; the tab stays open. Idempotent.
func (c *conn) Close() error {
	c.end(&browserbackend.Error{Class: browserbackend.ClassClosed, Code: browserbackend.CodeClosed, Backend: BrowserKind,
		Message: "backend closed"})
	c.cancel()
	<-c.done
	_ = c.ws.CloseNow()
	return nil
}

// String names the backend's tab, for logs.
func (c *conn) String() string { return fmt.Sprintf("farm-chromium tab %s", strconv.Quote(c.tab.ID)) }
