package local

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/mxschmitt/playwright-go"
)

// CDP methods a Client serves for the sessions of its page's cross-site
// frames.
const (
	methodAttachToTarget   = "Target.attachToTarget"
	methodDetachFromTarget = "Target.detachFromTarget"
	methodGetTargetInfo    = "Target.getTargetInfo"
)

// frameSessions are the CDP sessions of the page's cross-site frames
// (out-of-process iframes) a Client attached to, by the session id its
// Target.attachToTarget answered. Playwright's page session routes no
// flat sessions, so each is a CDPSession Playwright opens on the frame.
type frameSessions struct {
	mu sync.Mutex
	m  map[string]playwright.CDPSession
	n  int
}

// get returns the session of id.
func (f *frameSessions) get(id string) (playwright.CDPSession, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.m[id]
	return s, ok
}

// add keeps s and returns its session id.
func (f *frameSessions) add(s playwright.CDPSession) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("local-frame-%d", f.n)
	if f.m == nil {
		f.m = map[string]playwright.CDPSession{}
	}
	f.m[id] = s
	return id
}

// remove forgets id's session and returns it.
func (f *frameSessions) remove(id string) (playwright.CDPSession, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.m[id]
	delete(f.m, id)
	return s, ok
}

// detachAll detaches every session (best effort).
func (f *frameSessions) detachAll() {
	f.mu.Lock()
	m := f.m
	f.m = nil
	f.mu.Unlock()
	for _, s := range m {
		_ = s.Detach()
	}
}

// frameCommand returns the call that serves cmd when it concerns a
// cross-site frame's session (nil when it does not): an attach to one of
// the page's frames (Target.attachToTarget without a sessionId, flat),
// a detach from one of c's frame sessions, or a command on one.
func (c *Client) frameCommand(p *pageEntry, cmd browserbackend.Command, params map[string]any) func() (any, error) {
	if cmd.SessionID != "" {
		s, ok := c.frames.get(cmd.SessionID)
		if !ok {
			return nil
		}
		return func() (any, error) {
			res, err := s.Send(cmd.Method, params)
			return res, frameErr(cmd.Method, err)
		}
	}
	switch cmd.Method {
	case methodAttachToTarget:
		if flat, _ := params["flatten"].(bool); !flat {
			return nil
		}
		id, _ := params["targetId"].(string)
		return func() (any, error) { return c.attachFrame(p, id) }
	case methodDetachFromTarget:
		id, _ := params["sessionId"].(string)
		if _, ok := c.frames.get(id); !ok {
			return nil
		}
		return func() (any, error) {
			if s, ok := c.frames.remove(id); ok {
				return nil, frameErr(cmd.Method, s.Detach())
			}
			return nil, nil
		}
	}
	return nil
}

// attachFrame opens a CDPSession on the frame of p's page whose target id
// is target (a cross-site frame: Playwright opens sessions on those only)
// and answers as Target.attachToTarget does. A frame that is not the one is
// detached again; no such frame is Chrome's answer for an unknown target.
func (c *Client) attachFrame(p *pageEntry, target string) (any, error) {
	for _, fr := range p.page.Frames() {
		if fr == p.page.MainFrame() {
			continue
		}
		s, err := p.page.Context().NewCDPSession(fr)
		if err != nil {
			continue // a frame of the page's own process
		}
		info, err := s.Send(methodGetTargetInfo, nil)
		if err == nil && targetIDOf(info) == target {
			return map[string]any{"sessionId": c.frames.add(s)}, nil
		}
		_ = s.Detach()
	}
	return nil, &browserbackend.Error{Class: browserbackend.ClassProtocol, Method: methodAttachToTarget,
		Backend: browserbackend.KindLocal, Dispatched: true, CDPCode: cdpInvalidParams,
		Message: "local: no cross-site frame of the page has target id " + target}
}

// cdpInvalidParams is Chrome's JSON-RPC error code for a command whose
// params name nothing it has.
const cdpInvalidParams = -32602

// targetIDOf returns targetInfo.targetId of a Target.getTargetInfo answer.
func targetIDOf(res any) string {
	raw, err := json.Marshal(res)
	if err != nil {
		return ""
	}
	var v struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
		} `json:"targetInfo"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.TargetInfo.TargetID
}

// frameErr classifies the failure of a command on a frame's session: the
// browser's answer as such, anything else (the frame went away, its
// session closed) as a protocol error of that command alone, never as the
// page's or the browser's loss.
func frameErr(method string, err error) error {
	if err == nil {
		return nil
	}
	if e := classifySendError(method, err, nil); e.Class == browserbackend.ClassProtocol {
		return e
	}
	return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeCDPError,
		Method: method, Backend: browserbackend.KindLocal, Dispatched: true,
		Message: "local: the frame's session failed (the frame went away?)", Err: err}
}
