package vellumtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	tabid "github.com/browserchain/browserchain/hostproxy/tabs"
)

// debugger drives Chromium the way the Vellum extension drives
// chrome.debugger: tabs have small decimal ids, a tab is attached once at
// tab level on first use (a flat CDP session the client never names on the
// wire), commands without a cdpSessionId go to the active tab, and events
// of an attached tab are reported without anything naming the tab.
type debugger struct {
	conn *cdpConn
	// forward receives every event of an attached tab, and tab closes.
	onEvent func(method string, params json.RawMessage)
	onClose func(tab int, attached bool)

	mu        sync.Mutex
	nextTab   int
	tabs      map[int]*tab // tab id → tab
	byTarget  map[string]int
	bySession map[string]int
	active    int
}

type tab struct {
	id       int
	targetID string
	session  string        // "" while not attached
	attach   chan struct{} // non-nil while an attach runs; closed at its end
}

func newDebugger(onEvent func(string, json.RawMessage), onClose func(int, bool)) *debugger {
	return &debugger{onEvent: onEvent, onClose: onClose, tabs: make(map[int]*tab),
		byTarget: make(map[string]int), bySession: make(map[string]int)}
}

// start discovers the browser's tabs; the first becomes the active tab.
func (d *debugger) start(ctx context.Context) error {
	if _, err := d.conn.call(ctx, "", "Target.setDiscoverTargets", json.RawMessage(`{"discover":true}`)); err != nil {
		return fmt.Errorf("vellumtest: discover targets: %w", err)
	}
	raw, err := d.conn.call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return fmt.Errorf("vellumtest: list targets: %w", err)
	}
	var out struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("vellumtest: list targets: %w", err)
	}
	for _, t := range out.TargetInfos {
		if t.Type == "page" {
			d.register(t.TargetID)
		}
	}
	return nil
}

type targetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
	Title    string `json:"title"`
}

// register gives a page target a tab id (once) and returns it.
func (d *debugger) register(targetID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.byTarget[targetID]; ok {
		return id
	}
	d.nextTab++
	id := d.nextTab
	d.tabs[id] = &tab{id: id, targetID: targetID}
	d.byTarget[targetID] = id
	if d.active == 0 {
		d.active = id
	}
	return id
}

// event handles one CDP event from the browser connection.
func (d *debugger) event(sessionID, method string, params json.RawMessage) {
	if sessionID != "" {
		d.mu.Lock()
		_, ours := d.bySession[sessionID]
		d.mu.Unlock()
		if ours {
			d.onEvent(method, params)
		}
		return
	}
	switch method {
	case "Target.targetCreated":
		var p struct{ TargetInfo targetInfo }
		if json.Unmarshal(params, &p) == nil && p.TargetInfo.Type == "page" {
			d.register(p.TargetInfo.TargetID)
		}
	case "Target.targetDestroyed":
		var p struct{ TargetID string }
		_ = json.Unmarshal(params, &p)
		d.mu.Lock()
		id, ok := d.byTarget[p.TargetID]
		var attached bool
		if ok {
			t := d.tabs[id]
			attached = t.session != ""
			delete(d.bySession, t.session)
			delete(d.tabs, id)
			delete(d.byTarget, p.TargetID)
			if d.active == id {
				d.active = d.lastTab()
			}
		}
		d.mu.Unlock()
		if ok {
			if attached {
				d.onEvent("Inspector.detached", json.RawMessage(`{"reason":"Render process gone."}`))
			}
			d.onClose(id, attached)
		}
	case "Target.detachedFromTarget":
		var p struct{ SessionID string }
		_ = json.Unmarshal(params, &p)
		d.mu.Lock()
		if id, ok := d.bySession[p.SessionID]; ok {
			delete(d.bySession, p.SessionID)
			if t := d.tabs[id]; t != nil {
				t.session = ""
			}
		}
		d.mu.Unlock()
	}
}

// lastTab is the most recently opened tab still open (the one a browser
// shows after the active tab closed); d.mu is held.
func (d *debugger) lastTab() int {
	last := 0
	for id := range d.tabs {
		last = max(last, id)
	}
	return last
}

// failure is a result the client reports with isError true.
type failure struct{ content string }

func (f *failure) Error() string { return f.content }

func plain(format string, args ...any) error { return &failure{content: fmt.Sprintf(format, args...)} }

// twice encodes a CDP error as the Vellum extension reports it: the JSON of
// Chrome's error object inside the message of a -32000 error.
func twice(e *cdpError) error {
	inner, _ := json.Marshal(map[string]any{"code": e.Code, "message": e.Message})
	outer, _ := json.Marshal(map[string]any{"code": -32000, "message": string(inner)})
	return &failure{content: string(outer)}
}

func structured(code int, msg string) error {
	raw, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	return &failure{content: string(raw)}
}

// resolve returns the tab a command goes to: cdpSessionId of decimal digits
// names a tab, anything else a CDP target id; none means the active tab.
func (d *debugger) resolve(cdpSessionID string) (*tab, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cdpSessionID == "" {
		t := d.tabs[d.active]
		if t == nil {
			return nil, plain("No tab with given id %d.", d.active)
		}
		return t, nil
	}
	if id, ok := tabid.ParseID(cdpSessionID); ok {
		t := d.tabs[int(id)]
		if t == nil {
			return nil, plain("No tab with given id %d.", id)
		}
		return t, nil
	}
	id, ok := d.byTarget[cdpSessionID]
	if !ok {
		return nil, plain("No target with given id %s.", cdpSessionID)
	}
	return d.tabs[id], nil
}

// attached attaches the debugger to t once (concurrent callers share it)
// and returns its session.
func (d *debugger) attached(ctx context.Context, t *tab) (string, error) {
	for {
		d.mu.Lock()
		if t.session != "" {
			s := t.session
			d.mu.Unlock()
			return s, nil
		}
		if wait := t.attach; wait != nil {
			d.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		done := make(chan struct{})
		t.attach = done
		d.mu.Unlock()
		params, _ := json.Marshal(map[string]any{"targetId": t.targetID, "flatten": true})
		raw, err := d.conn.call(ctx, "", "Target.attachToTarget", params)
		var out struct{ SessionID string }
		if err == nil {
			err = json.Unmarshal(raw, &out)
		}
		d.mu.Lock()
		t.attach = nil
		close(done)
		if err == nil && out.SessionID != "" {
			t.session = out.SessionID
			d.bySession[out.SessionID] = t.id
		}
		d.mu.Unlock()
		if err != nil {
			var ce *cdpError
			if errors.As(err, &ce) {
				return "", plain("%s", ce.Message) // chrome.debugger.attach fails in plain text
			}
			return "", err
		}
	}
}

// run executes one command and returns the CDP result, or an error whose
// *failure content is what the client posts with isError true.
func (d *debugger) run(ctx context.Context, method string, params json.RawMessage, cdpSessionID, clientID string) (json.RawMessage, error) {
	if strings.HasPrefix(method, "Vellum.") {
		return d.vellum(ctx, method, params, clientID)
	}
	t, err := d.resolve(cdpSessionID)
	if err != nil {
		return nil, err
	}
	session, err := d.attached(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := d.conn.call(ctx, session, method, params)
	var ce *cdpError
	if errors.As(err, &ce) {
		return nil, twice(ce)
	}
	return res, err
}

func tabParam(params json.RawMessage) (tabid.ID, bool) {
	var p struct {
		TabID *tabid.ID `json:"tabId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TabID == nil {
		return 0, false
	}
	return *p.TabID, true
}

func (d *debugger) tab(id tabid.ID) (*tab, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tabs[int(id)]
	if t == nil {
		return nil, plain("No tab with given id %d.", id)
	}
	return t, nil
}

// vellumHandler answers one Vellum.* method with the value its result
// encodes, or the error the extension would give.
type vellumHandler func(d *debugger, ctx context.Context, params json.RawMessage, clientID string) (any, error)

// vellumMethods are the Vellum.* methods the debugger answers, by name.
var vellumMethods = map[string]vellumHandler{
	"Vellum.listTabs":  (*debugger).listTabs,
	"Vellum.createTab": (*debugger).createTab,
	"Vellum.closeTab":  (*debugger).closeTab,
	"Vellum.findTab":   (*debugger).findTab,
	"Vellum.selectTab": (*debugger).selectTab,
	"Vellum.attach":    (*debugger).attachTab,
	"Vellum.detach":    (*debugger).detachTab,
}

// vellum answers a Vellum.* method (vellumMethods); any other method is
// JSON-RPC's method not found (-32601).
func (d *debugger) vellum(ctx context.Context, method string, params json.RawMessage, clientID string) (json.RawMessage, error) {
	h, ok := vellumMethods[method]
	if !ok {
		return nil, structured(-32601, fmt.Sprintf("'%s' wasn't found", method))
	}
	v, err := h(d, ctx, params, clientID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// tabArg is the tab that params' tabId names; invalid params (-32602)
// without one, the extension's plain error for an unknown tab.
func (d *debugger) tabArg(params json.RawMessage) (*tab, error) {
	id, ok := tabParam(params)
	if !ok {
		return nil, structured(-32602, "tabId is required and must be a number")
	}
	return d.tab(id)
}

func (d *debugger) listTabs(ctx context.Context, _ json.RawMessage, _ string) (any, error) {
	infos, err := d.pages(ctx)
	if err != nil {
		return nil, err
	}
	type entry struct {
		TabID    int    `json:"tabId"`
		WindowID int    `json:"windowId"`
		URL      string `json:"url"`
		Title    string `json:"title"`
		Active   bool   `json:"active"`
		Pinned   bool   `json:"pinned"`
	}
	d.mu.Lock()
	out := make([]entry, 0, len(infos))
	for _, in := range infos {
		if id, ok := d.byTarget[in.TargetID]; ok {
			out = append(out, entry{TabID: id, WindowID: 1, URL: in.URL, Title: in.Title, Active: id == d.active})
		}
	}
	d.mu.Unlock()
	return map[string]any{"tabs": out}, nil
}

// createTab opens an active about:blank, whatever it is given.
func (d *debugger) createTab(ctx context.Context, _ json.RawMessage, clientID string) (any, error) {
	raw, err := d.conn.call(ctx, "", "Target.createTarget", json.RawMessage(`{"url":"about:blank"}`))
	if err != nil {
		return nil, plain("%v", err)
	}
	var out struct{ TargetID string }
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	id := d.register(out.TargetID)
	d.mu.Lock()
	d.active = id
	d.mu.Unlock()
	return map[string]string{"tabId": strconv.Itoa(id), "clientId": clientID}, nil
}

// closeTab closes the tab and echoes its tabId as given.
func (d *debugger) closeTab(ctx context.Context, params json.RawMessage, clientID string) (any, error) {
	t, err := d.tabArg(params)
	if err != nil {
		return nil, err
	}
	p, _ := json.Marshal(map[string]string{"targetId": t.targetID})
	if _, err := d.conn.call(ctx, "", "Target.closeTarget", p); err != nil {
		return nil, plain("%v", err)
	}
	var given struct {
		TabID json.RawMessage `json:"tabId"`
	}
	_ = json.Unmarshal(params, &given)
	return map[string]any{"closed": true, "tabId": given.TabID, "clientId": clientID}, nil
}

// findTab answers the first tab whose URL matches params' urlPattern.
func (d *debugger) findTab(ctx context.Context, params json.RawMessage, _ string) (any, error) {
	var p struct {
		URLPattern string `json:"urlPattern"`
	}
	_ = json.Unmarshal(params, &p)
	infos, err := d.pages(ctx)
	if err != nil {
		return nil, err
	}
	re := patternRegexp(p.URLPattern)
	for _, in := range infos {
		d.mu.Lock()
		id, ok := d.byTarget[in.TargetID]
		d.mu.Unlock()
		if ok && re.MatchString(in.URL) {
			return map[string]string{"tabId": strconv.Itoa(id), "url": in.URL, "title": in.Title}, nil
		}
	}
	return nil, plain("No tab matches %s.", p.URLPattern)
}

// selectTab activates the tab and makes it the active one.
func (d *debugger) selectTab(ctx context.Context, params json.RawMessage, _ string) (any, error) {
	var p struct {
		TabID *int `json:"tabId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TabID == nil {
		return nil, structured(-32602, "tabId is required and must be a number")
	}
	t, err := d.tab(tabid.ID(*p.TabID))
	if err != nil {
		return nil, err
	}
	tp, _ := json.Marshal(map[string]string{"targetId": t.targetID})
	if _, err := d.conn.call(ctx, "", "Target.activateTarget", tp); err != nil {
		return nil, plain("%v", err)
	}
	d.mu.Lock()
	d.active = t.id
	d.mu.Unlock()
	return map[string]any{}, nil
}

// attachTab attaches the debugger to the tab.
func (d *debugger) attachTab(ctx context.Context, params json.RawMessage, _ string) (any, error) {
	t, err := d.tabArg(params)
	if err != nil {
		return nil, err
	}
	if _, err := d.attached(ctx, t); err != nil {
		return nil, err
	}
	return map[string]any{"attached": true, "target": map[string]int{"tabId": t.id}}, nil
}

// detachTab detaches the debugger from the tab, if it is attached.
func (d *debugger) detachTab(ctx context.Context, params json.RawMessage, _ string) (any, error) {
	t, err := d.tabArg(params)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	session := t.session
	t.session = ""
	delete(d.bySession, session)
	d.mu.Unlock()
	if session != "" {
		p, _ := json.Marshal(map[string]string{"sessionId": session})
		_, _ = d.conn.call(ctx, "", "Target.detachFromTarget", p)
	}
	return map[string]any{"detached": true, "target": map[string]int{"tabId": t.id}}, nil
}

// pages lists the browser's page targets.
func (d *debugger) pages(ctx context.Context) ([]targetInfo, error) {
	raw, err := d.conn.call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return nil, plain("%v", err)
	}
	var out struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	pages := out.TargetInfos[:0]
	for _, t := range out.TargetInfos {
		if t.Type == "page" {
			pages = append(pages, t)
		}
	}
	return pages, nil
}

// patternRegexp turns a URL pattern with * wildcards into a regexp; a
// pattern without * matches as a substring.
func patternRegexp(p string) *regexp.Regexp {
	if !strings.Contains(p, "*") {
		return regexp.MustCompile(regexp.QuoteMeta(p))
	}
	parts := strings.Split(p, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}
