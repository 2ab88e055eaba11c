package local

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/browserchain/browserchain/browserbackend"
)

// Tab implements browserbackend.TabScoped: the conversation's page, by its
// CDP target id once the provider's Build resolved it ("" before). Every
// page of the local browser is the conversation's own.
func (c *Client) Tab() browserbackend.Tab {
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	if p == nil {
		return browserbackend.Tab{Owned: true}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return browserbackend.Tab{ID: p.targetID, Owned: true}
}

// resolveTab learns the target id of c's page (Target.getTargetInfo, once
// per page). A client whose page is not open yet (a lost page that its first
// command reports) resolves nothing.
func (c *Client) resolveTab(ctx context.Context) error {
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	known := p.targetID != ""
	p.mu.Unlock()
	if known {
		return nil
	}
	raw, err := c.Send(ctx, browserbackend.Command{Method: "Target.getTargetInfo"})
	if err != nil {
		return err
	}
	var info struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
		} `json:"targetInfo"`
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Backend: browserbackend.KindLocal, Method: "Target.getTargetInfo", Dispatched: true,
			Message: "unreadable target info", Err: err}
	}
	p.mu.Lock()
	p.targetID = info.TargetInfo.TargetID
	p.mu.Unlock()
	return nil
}

// build is the Build of an invocation of conversation asking for req: TabNew
// opens a new page of the conversation (its other pages stay open),
// TabByID selects one of its pages, TabActive and TabCurrent use the
// current one (the local browser has no user tabs).
func (b *Browser) build(ctx context.Context, conversation string, req browserbackend.TabRequest) (browserbackend.ScopedClient, error) {
	key, err := b.pageKey(conversation, req)
	if err != nil {
		return nil, err
	}
	cl := b.Client(key)
	err = cl.Open(ctx)
	if err == nil {
		err = cl.resolveTab(ctx)
	}
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return cl, nil
}

// ReleaseConversation implements browserbackend.ConversationReleaser: with
// close it closes the conversation's pages; without, it keeps them (a page
// of the local browser is nobody else's to hand back). Safe for concurrent
// use.
func (p provider) ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]browserbackend.Released, error) {
	if !close {
		return nil, nil
	}
	_ = p.b.adoptPopups(ctx, conversationID) // popups close with the conversation
	p.b.mu.Lock()
	keys := []string{conversationID}
	if ct := p.b.tabs[conversationID]; ct != nil {
		keys = slices.Clone(ct.keys)
	}
	var rel []browserbackend.Released
	for _, k := range keys {
		if pe := p.b.pages[k]; pe != nil {
			rel = append(rel, browserbackend.Released{Kind: browserbackend.KindLocal, Tab: browserbackend.Tab{ID: pe.tabID(), Owned: true}, Closed: true})
		}
	}
	p.b.mu.Unlock()
	if err := p.b.CloseConversation(conversationID); err != nil {
		return nil, err
	}
	return rel, nil
}
