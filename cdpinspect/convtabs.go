package cdpinspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// listTargets returns the browser's targets (Target.getTargets on the
// browser session of c).
func listTargets(ctx context.Context, c *conn) ([]targetInfo, error) {
	raw, err := c.call(ctx, "Target.getTargets", nil, "")
	if err != nil {
		return nil, err
	}
	var res struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeInvalidResponse, Backend: bb.KindCDPInspect,
			Method: "Target.getTargets", Dispatched: true, Message: "malformed target list", Err: err}
	}
	return res.TargetInfos, nil
}

// adoptPopups returns the conversation's tabs t as the browser's targets
// infos show them: pages that one of its tabs opened (and their own
// popups) join as owned tabs, tabs no longer listed are dropped (the
// current one replaced by the most recently current other). ok is false
// when no tab of the conversation is left.
func adoptPopups(t convTab, infos []targetInfo, closed func(id string) bool) (convTab, bool) {
	live := make(map[string]bool, len(infos))
	for _, in := range infos {
		if in.Type == "page" && !closed(in.TargetID) {
			live[in.TargetID] = true
		}
	}
	for !live[t.targetID] {
		next, ok := t.promoted()
		if !ok {
			return convTab{}, false
		}
		t = next
	}
	kept := t.others[:0:0]
	for _, x := range t.others {
		if live[x.targetID] {
			kept = append(kept, x)
		}
	}
	t.others = kept
	for added := true; added; {
		added = false
		for _, in := range infos {
			if live[in.TargetID] && in.OpenerID != "" && !t.holds(in.TargetID) && t.holds(in.OpenerID) {
				t.others = append(t.others, convTab{targetID: in.TargetID, owned: true, opener: in.OpenerID})
				added = true
			}
		}
	}
	return t, true
}

// ConversationTabs implements browserbackend.TabLister: it reads the
// browser's targets on the shared connection (dialling it if needed),
// adopts the popups of the conversation's tabs and drops the tabs closed
// meanwhile. Safe for concurrent use.
func (p *Provider) ConversationTabs(ctx context.Context, conversationID string) ([]bb.TabInfo, error) {
	if conversationID == "" || !p.tabs.has(conversationID) {
		return nil, nil
	}
	unlock, err := p.tabs.lock(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, key, infos, err := p.liveTabs(ctx, conversationID)
	if err != nil || key == (tabKey{}) {
		return nil, err
	}
	byID := make(map[string]targetInfo, len(infos))
	for _, in := range infos {
		byID[in.TargetID] = in
	}
	var out []bb.TabInfo
	for i, x := range t.all() {
		in := byID[x.targetID]
		out = append(out, bb.TabInfo{Tab: bb.Tab{ID: x.targetID, Owned: x.owned}, URL: in.URL, Title: in.Title,
			Current: i == 0, Opener: x.opener})
	}
	return out, nil
}

// liveTabs reads the browser's targets and brings conversation's tabs up
// to date with them (see adoptPopups); key is zero when the conversation
// has no tab in the browser that runs now. The caller holds the
// conversation's lock.
func (p *Provider) liveTabs(ctx context.Context, conversation string) (convTab, tabKey, []targetInfo, error) {
	s := p.settings()
	sc, err := p.shared(ctx, &s)
	if err != nil {
		return convTab{}, tabKey{}, nil, err
	}
	defer sc.release()
	key := tabKey{browser: sc.ep.BrowserWSURL, conversation: conversation}
	t, ok := p.tabs.get(key)
	if !ok {
		return convTab{}, tabKey{}, nil, nil
	}
	cctx, cancel := withDeadline(ctx, s.commandTimeout)
	defer cancel()
	infos, err := listTargets(cctx, sc.c)
	if err != nil {
		return convTab{}, tabKey{}, nil, err
	}
	now, ok := adoptPopups(t, infos, p.tabs.wasClosed)
	if !ok {
		p.tabs.forget(key)
		p.forgetShared(ctx, conversation)
		return convTab{}, tabKey{}, nil, nil
	}
	if now.targetID != t.targetID {
		p.forgetShared(ctx, conversation) // its session was on the closed tab
	}
	p.tabs.set(key, now)
	return now, key, infos, nil
}

// CloseTab implements browserbackend.TabLister: an owned tab is closed
// (Target.closeTarget), an adopted user tab only let go of. Safe for
// concurrent use.
func (p *Provider) CloseTab(ctx context.Context, conversationID, tabID string) (bb.Released, error) {
	notHeld := &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeTargetNotFound, Backend: bb.KindCDPInspect,
		Message: fmt.Sprintf("target %q is not a tab of this conversation", tabID)}
	if conversationID == "" || !p.tabs.has(conversationID) {
		return bb.Released{}, notHeld
	}
	unlock, err := p.tabs.lock(ctx, conversationID)
	if err != nil {
		return bb.Released{}, err
	}
	defer unlock()
	t, key, _, err := p.liveTabs(ctx, conversationID)
	if err != nil {
		return bb.Released{}, err
	}
	if key == (tabKey{}) || !t.holds(tabID) {
		return bb.Released{}, notHeld
	}
	var x convTab
	for _, y := range t.all() {
		if y.targetID == tabID {
			x = y
		}
	}
	rel := bb.Released{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: tabID, Owned: x.owned}}
	if x.owned {
		s := p.settings()
		sc, err := p.shared(ctx, &s)
		if err != nil {
			return bb.Released{}, err
		}
		cctx, cancel := withDeadline(ctx, s.commandTimeout)
		params, _ := json.Marshal(map[string]string{"targetId": tabID})
		_, err = sc.c.call(cctx, "Target.closeTarget", params, "")
		cancel()
		sc.release()
		var e *bb.Error
		switch {
		case err == nil:
			rel.Closed = true
			p.tabs.closed.Add(tabID, struct{}{})
		case errors.As(err, &e) && e.Class == bb.ClassProtocol:
			rel.Gone = true
		default:
			return bb.Released{}, err
		}
	}
	if tabID == t.targetID {
		p.forgetShared(ctx, conversationID)
		if next, ok := t.promoted(); ok {
			p.tabs.set(key, next)
		} else {
			p.tabs.forget(key)
		}
		return rel, nil
	}
	t.others = t.without(tabID)[1:]
	p.tabs.set(key, t)
	return rel, nil
}

// wasClosed reports whether CloseTab closed the target id.
func (r *tabRegistry) wasClosed(id string) bool { return r.closed.Contains(id) }
