package mcptools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// SessionArgs are browser_navigate's saved-login properties (see
// tools.SessionInput); they apply when the call opens the browser.
type SessionArgs struct {
	ContextName    string `json:"context_name,omitempty" jsonschema:"Saved login to open (first call only)."`
	PersistContext bool   `json:"persist_context,omitempty" jsonschema:"Save the login into context_name at close."`
	HumanLogin     bool   `json:"human_login,omitempty" jsonschema:"A person signs in live; then browser_save_context."`
	AllowExtract   bool   `json:"allow_extract,omitempty" jsonschema:"Let reads see a reopened login (redacted)."`
}

func (a SessionArgs) input() tools.SessionInput {
	return tools.SessionInput{ContextName: a.ContextName, PersistContext: a.PersistContext, HumanLogin: a.HumanLogin, AllowExtract: a.AllowExtract}
}

// SaveContextArgs is the browser_save_context input.
type SaveContextArgs struct {
	ContextName string `json:"context_name" jsonschema:"Saved login name."`
	Common
}

// registerSessionTools adds browser_save_context.
func (s *Server) registerSessionTools(srv *mcp.Server) {
	add(s, srv, toolDef[SaveContextArgs, tools.SaveContextResult]{
		name: "browser_save_context", title: "Save login",
		desc: "No browser open: create the empty saved login context_name. In a human_login browser: mark the sign-in done.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a SaveContextArgs) (tools.SaveContextResult, error) {
			return s.opts.Tools.SaveContext(ctx, inv, tools.SaveContextInput{ContextName: a.ContextName, TimeoutMs: a.TimeoutMs})
		},
		text:    func(r tools.SaveContextResult) string { return "saved login " + r.ContextName + ": " + r.State },
		backend: func(tools.SaveContextResult) browserbackend.Kind { return "" },
	})
}
