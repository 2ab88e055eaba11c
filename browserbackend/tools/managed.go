package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/sessions"
)

// SessionInput is how a conversation's browser opens: the fields of
// NavigateInput that matter only on the call that opens the browser (the
// conversation's first call, or its first after Close or Detach).
type SessionInput struct {
	// ContextName opens the browser on the saved login of this name
	// (1–64 characters; see SaveContext). It needs Options.Sessions and a
	// backend that isolates conversations (browserbackend.CapIsolated).
	// Reopening a saved login needs a grant matching the invocation's
	// AgentID or one of its Roles; without one it is forbidden.
	ContextName string `json:"context_name,omitempty"`
	// PersistContext writes the browser's cookies and localStorage into
	// ContextName when the conversation closes.
	PersistContext bool `json:"persist_context,omitempty"`
	// HumanLogin starts the human-first flow on ContextName: a person logs
	// in through the live view, SaveContext marks it done, and Close
	// persists it. The saved login is locked for sessions.LockDuration
	// meanwhile; another open of it is context_locked.
	HumanLogin bool `json:"human_login,omitempty"`
	// AllowExtract lets Extract, Links and Screenshot run on a browser
	// that reopened a saved login; what they return is then redacted of
	// e-mail addresses, phone numbers and card numbers.
	AllowExtract bool `json:"allow_extract,omitempty"`
}

// managed keeps each conversation's managed session: its record in
// Options.Sessions and the saved login it opened.
type managed struct {
	store *sessions.Store
	mu    sync.Mutex
	m     map[string]*managedSession
}

// managedSession is one conversation's open browser.
type managedSession struct {
	id      string
	who     sessions.Identity
	name    string // the saved login; "" for none
	persist bool
	human   bool
	allow   bool
	// reopened: the saved login held a login when opened; reads need
	// allow and are redacted.
	reopened bool
	restore  *sessions.StorageState // applied once the first call's page is up
	active   bool
	origins  map[string]bool // origins navigated to, whose localStorage is saved
}

func identityOf(inv browserbackend.Invocation) sessions.Identity {
	return sessions.Identity{ActorPrincipalID: inv.ActorPrincipalID, AgentID: inv.AgentID, Roles: inv.Roles}
}

func refused(op, param, msg string) error {
	return guardErr(op, &guard.Error{Code: guard.CodeValidationFailed, Param: param, Message: msg})
}

// open returns the conversation's managed session, beginning one (the
// "creating" record, the saved login opened and locked) when the
// conversation has none; in, when set, is the opening call's SessionInput.
// fresh reports a session begun by this call. nil without Options.Sessions.
func (m *managed) open(ctx context.Context, op string, inv browserbackend.Invocation, in *SessionInput) (ms *managedSession, fresh bool, err error) {
	var want SessionInput
	if in != nil {
		want = *in
	}
	if want.ContextName == "" && (want.PersistContext || want.HumanLogin) {
		return nil, false, refused(op, "context_name", "persist_context and human_login need context_name")
	}
	if m.store == nil {
		if want.ContextName != "" {
			return nil, false, guardErr(op, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "context_name", Message: "no session store is configured"})
		}
		return nil, false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ms := m.m[inv.ConversationID]; ms != nil {
		if want.ContextName != "" && want.ContextName != ms.name {
			return nil, false, refused(op, "context_name", "the browser is already open on another saved login or none; close it first")
		}
		return ms, false, nil
	}
	ms = &managedSession{who: identityOf(inv), name: want.ContextName, persist: want.PersistContext || want.HumanLogin,
		human: want.HumanLogin, allow: want.AllowExtract, origins: map[string]bool{}}
	ms.id, err = m.store.Begin(ctx, sessions.Begin{ConversationID: inv.ConversationID, ActorPrincipalID: inv.ActorPrincipalID})
	if err != nil {
		return nil, false, guardErr(op, err)
	}
	if ms.name != "" {
		sc, err := m.store.Context(ctx, inv.ActorPrincipalID, ms.name)
		if err == nil {
			var st sessions.StorageState
			st, err = m.store.OpenContext(ctx, ms.who, sessions.ContextOpen{Name: ms.name, Fill: ms.persist, HumanLogin: ms.human, SessionID: ms.id})
			ms.restore, ms.reopened = &st, sc.Saved
		}
		if err != nil {
			_ = m.store.Fail(ctx, ms.id, "the saved login was refused")
			return nil, false, guardErr(op, err)
		}
	}
	m.m[inv.ConversationID] = ms
	return ms, true, nil
}

// ready runs in the call once its backend and page are up: the first time,
// it checks that a saved login's backend isolates the conversation,
// restores the saved login, and promotes the record to "active".
func (m *managed) ready(ctx context.Context, op string, ms *managedSession, c callClient) error {
	if ms == nil {
		return nil
	}
	m.mu.Lock()
	active, restore := ms.active, ms.restore
	m.mu.Unlock()
	if active {
		return nil
	}
	if ms.name != "" && c.Kind() == "" {
		// Select the backend (a no-op command) to learn its capabilities
		// before anything of the saved login reaches it.
		if _, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"0"}`)}); err != nil {
			return wrap(op, err)
		}
	}
	if ms.name != "" && !c.Caps().Has(browserbackend.CapIsolated) {
		return &Error{Op: op, Code: CodeBackend, Backend: c.Kind(), Err: &browserbackend.Error{Class: browserbackend.ClassPolicy,
			Code: browserbackend.CodeNotSupported, Backend: c.Kind(),
			Message: "this backend does not isolate a conversation's cookies and storage, which a saved login needs"}}
	}
	if restore != nil {
		if err := restoreState(ctx, c.Client, *restore); err != nil {
			return wrap(op, err)
		}
	}
	if err := m.store.ActivateAs(ctx, ms.id, c.Kind()); err != nil {
		return guardErr(op, err)
	}
	m.mu.Lock()
	ms.active, ms.restore = true, nil
	m.mu.Unlock()
	return nil
}

// settle ends a session begun by a call whose backend never came up: its
// record is "error" and its lock released, so the next call begins anew.
func (m *managed) settle(conv string, ms *managedSession, fresh bool) {
	if ms == nil || !fresh {
		return
	}
	m.mu.Lock()
	active := ms.active
	if !active && m.m[conv] == ms {
		delete(m.m, conv)
	}
	m.mu.Unlock()
	if active {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultActionTimeout)
	defer cancel()
	_ = m.store.Fail(ctx, ms.id, "no backend served the first call")
	if ms.name != "" {
		_ = m.store.ReleaseContext(ctx, ms.who.ActorPrincipalID, ms.name, ms.id)
	}
}

// gated reports whether a read of the conversation's page needs
// allow_extract (it reopened a saved login), and whether its output is
// redacted.
func (m *managed) gated(ms *managedSession) (refuse, redactOut bool) {
	if ms == nil || !ms.reopened {
		return false, false
	}
	return !ms.allow, true
}

func (m *managed) session(conv string) *managedSession {
	if m.store == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[conv]
}

// visited records the origin of a page the conversation navigated to.
func (m *managed) visited(ms *managedSession, u string) {
	if ms == nil || ms.name == "" {
		return
	}
	if o := originOf(u); o != "" {
		m.mu.Lock()
		ms.origins[o] = true
		m.mu.Unlock()
	}
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// end ends the conversation's managed session (Close or Detach): a saved
// login opened to be filled is captured from the browser and written
// (for human_login, only once SaveContext marked it done), a lock is
// released, and the record is closed by by.
func (m *managed) end(ctx context.Context, op string, t *Tools, inv browserbackend.Invocation, by sessions.ClosedBy) error {
	if m.store == nil {
		return nil
	}
	m.mu.Lock()
	ms := m.m[inv.ConversationID]
	delete(m.m, inv.ConversationID)
	m.mu.Unlock()
	if ms == nil {
		return nil
	}
	var errs error
	if ms.name != "" && ms.active {
		save := ms.persist
		if ms.human {
			done, err := m.store.HumanLoginDone(ctx, ms.who.ActorPrincipalID, ms.name)
			save = err == nil && done
		}
		if save {
			if err := m.capture(ctx, t, inv, ms); err != nil {
				errs = wrap(op, err)
			}
		}
	}
	if ms.name != "" {
		_ = m.store.ReleaseContext(ctx, ms.who.ActorPrincipalID, ms.name, ms.id)
	}
	if ms.active {
		if _, err := m.store.End(ctx, ms.id, by); err != nil && errs == nil {
			errs = guardErr(op, err)
		}
	}
	return errs
}

// capture reads the conversation's cookies and the localStorage of the
// origins it visited and writes them into its saved login.
func (m *managed) capture(ctx context.Context, t *Tools, inv browserbackend.Invocation, ms *managedSession) error {
	inv.Tab = browserbackend.TabRequest{}
	c := t.sel.Client(inv)
	defer c.Close()
	if raw, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"location.href","returnByValue":true}`)}); err == nil {
		var r struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
		}
		if json.Unmarshal(raw, &r) == nil {
			m.visited(ms, r.Result.Value)
		}
	}
	m.mu.Lock()
	origins := make([]string, 0, len(ms.origins))
	for o := range ms.origins {
		origins = append(origins, o)
	}
	m.mu.Unlock()
	st, err := captureState(ctx, c, origins)
	if err != nil {
		return err
	}
	if err := m.store.SaveState(ctx, ms.who.ActorPrincipalID, ms.name, st); err != nil {
		return guardErr("close", err)
	}
	t.log.Debug("saved login written", "conversationId", inv.ConversationID, "state", st)
	return nil
}

// captureState reads the cookies of the page's browser context
// (Network.getAllCookies) and the localStorage of those of origins that
// have a frame open in the page (DOMStorage.getDOMStorageItems).
func captureState(ctx context.Context, c *browserbackend.Client, origins []string) (sessions.StorageState, error) {
	var st sessions.StorageState
	raw, err := c.Send(ctx, browserbackend.Command{Method: "Network.getAllCookies"})
	if err != nil {
		return st, err
	}
	var all struct {
		Cookies []struct {
			sessions.Cookie
			Session bool `json:"session"`
		} `json:"cookies"`
	}
	if err := json.Unmarshal(raw, &all); err != nil {
		return st, err
	}
	for _, ck := range all.Cookies {
		if ck.Session || ck.Expires < 0 {
			ck.Expires = 0
		}
		st.Cookies = append(st.Cookies, ck.Cookie)
	}
	for _, o := range origins {
		params, _ := json.Marshal(map[string]any{"storageId": map[string]any{"securityOrigin": o, "isLocalStorage": true}})
		raw, err := c.Send(ctx, browserbackend.Command{Method: "DOMStorage.getDOMStorageItems", Params: params})
		if err != nil {
			continue // no frame of that origin is open: its storage cannot be read
		}
		var items struct {
			Entries [][]string `json:"entries"`
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			return st, err
		}
		og := sessions.OriginStorage{Origin: o}
		for _, e := range items.Entries {
			if len(e) == 2 {
				og.LocalStorage = append(og.LocalStorage, [2]string{e[0], e[1]})
			}
		}
		if len(og.LocalStorage) > 0 {
			st.Origins = append(st.Origins, og)
		}
	}
	return st, nil
}

// restoreState writes st into the page's browser context: the cookies
// at once (Network.setCookies), the localStorage of each origin by a script
// that runs in every new document of the page before the site's own
// (Page.addScriptToEvaluateOnNewDocument) and sets the keys that origin
// lacks — DevTools writes localStorage only for an origin that has a frame
// open, and the page has none yet. Tabs opened later get the cookies only.
func restoreState(ctx context.Context, c *browserbackend.Client, st sessions.StorageState) error {
	if len(st.Cookies) > 0 {
		params, _ := json.Marshal(map[string]any{"cookies": st.Cookies})
		if _, err := c.Send(ctx, browserbackend.Command{Method: "Network.setCookies", Params: params}); err != nil {
			return err
		}
	}
	if len(st.Origins) == 0 {
		return nil
	}
	byOrigin := make(map[string][][2]string, len(st.Origins))
	for _, o := range st.Origins {
		byOrigin[o.Origin] = o.LocalStorage
	}
	data, _ := json.Marshal(byOrigin)
	params, _ := json.Marshal(map[string]any{"source": fmt.Sprintf(restoreStorageScript, data)})
	_, err := c.Send(ctx, browserbackend.Command{Method: "Page.addScriptToEvaluateOnNewDocument", Params: params})
	return err
}

const restoreStorageScript = `(() => {
	const e = (%s)[location.origin];
	if (!e) return;
	try { for (const [k, v] of e) if (localStorage.getItem(k) === null) localStorage.setItem(k, v); } catch (_) {}
})()`
