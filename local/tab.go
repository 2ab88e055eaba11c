package local

import (
	"context"
	"encoding/json"
	"fmt"

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
// replaces the conversation's page with a new one, TabActive and TabCurrent
// use its page (the local browser has no user tabs), TabByID must name it.
func (b *Browser) build(ctx context.Context, conversation string, req browserbackend.TabRequest) (browserbackend.ScopedClient, error) {
	if req.Want == browserbackend.TabNew {
		if err := b.CloseConversation(conversation); err != nil {
			b.log.Debug("local: closing the page a new tab replaces failed", "conversationId", conversation, "error", err)
		}
	}
	cl := b.Client(conversation)
	err := cl.Open(ctx)
	if err == nil {
		err = cl.resolveTab(ctx)
	}
	if err == nil && req.Want == browserbackend.TabByID && cl.Tab().ID != req.ID {
		err = &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeTargetNotFound,
			Backend: browserbackend.KindLocal, Message: fmt.Sprintf("target %q is not a tab of this conversation", req.ID)}
	}
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return cl, nil
}

// ReleaseConversation implements browserbackend.ConversationReleaser: with
// close it closes the conversation's page; without, it keeps the page (a
// page of the local browser is nobody else's to hand back). Safe for
// concurrent use.
func (p provider) ReleaseConversation(_ context.Context, conversationID string, close bool) ([]browserbackend.Released, error) {
	if !close {
		return nil, nil
	}
	p.b.mu.Lock()
	pe := p.b.pages[conversationID]
	p.b.mu.Unlock()
	if pe == nil {
		return nil, p.b.CloseConversation(conversationID)
	}
	pe.mu.Lock()
	tab := browserbackend.Tab{ID: pe.targetID, Owned: true}
	pe.mu.Unlock()
	if err := p.b.CloseConversation(conversationID); err != nil {
		return nil, err
	}
	return []browserbackend.Released{{Kind: browserbackend.KindLocal, Tab: tab, Closed: true}}, nil
}
