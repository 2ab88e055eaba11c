package tools

import (
	"context"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
)

// SaveContextInput is the browser_save_context tool input.
type SaveContextInput struct {
	// ContextName names the saved login, 1–64 characters.
	ContextName string `json:"context_name"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
}

// What SaveContext did (SaveContextResult.State).
const (
	// SaveContextCreated: with no browser open, the empty saved login was
	// created (or already existed).
	SaveContextCreated = "created"
	// SaveContextMarked: the human_login flow is done; the close persists
	// the login and the lock is released.
	SaveContextMarked = "marked"
	// SaveContextAtClose: the browser opened the saved login with
	// persist_context; the close writes it.
	SaveContextAtClose = "at_close"
)

// SaveContextResult reports what SaveContext did.
type SaveContextResult struct {
	ContextName string `json:"context_name"`
	State       string `json:"state"`
	Call
}

// SaveContext is the browser_save_context tool. With no browser open for
// the conversation it creates the empty saved login ContextName, owned by
// the invocation's ActorPrincipalID; a browser opened on it with
// persist_context or human_login fills it at close. On a browser opened
// on ContextName with human_login it marks the person's login done. From
// a browser open on another saved login or none it is validation_failed.
// Without Options.Sessions it is feature_not_configured.
func (t *Tools) SaveContext(ctx context.Context, inv browserbackend.Invocation, in SaveContextInput) (SaveContextResult, error) {
	const op = "save_context"
	ctx, cancel, inv, err := t.prepare(ctx, op, inv, "", in.TimeoutMs)
	if err != nil {
		return SaveContextResult{}, err
	}
	defer cancel()
	m := t.managed
	if m.store == nil {
		return SaveContextResult{}, guardErr(op, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "context_name", Message: "no session store is configured"})
	}
	res := SaveContextResult{ContextName: in.ContextName}
	ms := m.session(inv.ConversationID)
	switch {
	case ms == nil:
		if _, err := m.store.CreateContext(ctx, inv.ActorPrincipalID, in.ContextName); err != nil {
			return res, guardErr(op, err)
		}
		res.State = SaveContextCreated
	case ms.name != in.ContextName:
		return res, refused(op, "context_name", "the browser is open on another saved login or none; close it first")
	case ms.human:
		if err := m.store.MarkHumanLoginDone(ctx, inv.ActorPrincipalID, in.ContextName, ms.id); err != nil {
			return res, guardErr(op, err)
		}
		res.State = SaveContextMarked
	case ms.persist:
		res.State = SaveContextAtClose
	default:
		return res, refused(op, "persist_context", "the browser opened this saved login without persist_context or human_login")
	}
	return res, nil
}
