package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// ActArgs is the browser_act input.
type ActArgs struct {
	Instruction string `json:"instruction" jsonschema:"e.g. open the pricing menu"`
	Common
}

// ObserveArgs is the browser_observe input.
type ObserveArgs struct {
	Instruction string `json:"instruction" jsonschema:"Elements to find."`
	Common
}

// registerPlainTools adds the plain-language tools, which the Tools' model
// carries out (tools.Plain).
func (s *Server) registerPlainTools(srv *mcp.Server) {
	add(s, srv, toolDef[ActArgs, tools.ActResult]{
		name: "browser_act", title: "Act",
		desc: "Carry out a plain-language instruction on the page; the server's model acts by ref.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ActArgs) (tools.ActResult, error) {
			return s.opts.Tools.Plain().Act(ctx, inv, tools.ActInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Instruction: a.Instruction})
		},
		text:    actText,
		backend: func(r tools.ActResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ObserveArgs, tools.ObserveResult]{
		name: "browser_observe", title: "Observe", readOnly: true,
		desc: "Find the elements an instruction describes, by ref; acts on nothing.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ObserveArgs) (tools.ObserveResult, error) {
			return s.opts.Tools.Plain().Observe(ctx, inv, tools.ObserveInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Instruction: a.Instruction})
		},
		text:    observeText,
		backend: func(r tools.ObserveResult) browserbackend.Kind { return r.Backend },
	})
}

// extract runs browser_extract: the element's or page's text, or with an
// instruction or a schema the model's answer.
func (s *Server) extract(ctx context.Context, inv browserbackend.Invocation, a ExtractArgs) (tools.ExtractResult, error) {
	in := tools.ExtractInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Target: a.target(), MaxChars: a.MaxChars,
		Instruction: a.Instruction}
	if a.Schema != nil {
		raw, err := json.Marshal(a.Schema)
		if err != nil {
			return tools.ExtractResult{}, &tools.Error{Op: "extract", Code: tools.CodeInvalidInput, Message: "schema is not JSON"}
		}
		in.Schema = raw
	}
	return s.opts.Tools.Read().Extract(ctx, inv, in)
}

func actText(r tools.ActResult) string {
	var b strings.Builder
	steps := make([]string, len(r.Actions))
	for i, a := range r.Actions {
		steps[i] = a.Action + " " + a.Ref
	}
	fmt.Fprintf(&b, "Done: %s (backend %s).", strings.Join(steps, ", "), r.Backend)
	for _, a := range r.Actions {
		b.WriteString(effectsText(a.Effects))
	}
	return b.String()
}

func observeText(r tools.ObserveResult) string {
	if len(r.Elements) == 0 {
		return "No element on " + r.URL + " matches."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d on %s:", len(r.Elements), r.URL)
	for _, e := range r.Elements {
		fmt.Fprintf(&b, "\n- %s %s", e.Ref, e.Description)
	}
	return b.String()
}

// approvalSchema is the form of an approval elicitation: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve",` +
	`"description":"Let the agent run this browser action."}},"required":["approve"]}`)

// ErrNoElicitation is the cause of an approval_unavailable refusal on a
// session whose client did not declare the elicitation capability.
var ErrNoElicitation = errors.New("mcptools: the client does not support elicitation, so the approval cannot be asked")

// elicitApproval asks the user of ss's client to approve a gated call
// (tools.Options.Approvals) through MCP elicitation, with a form of one
// boolean, approve. Accepted with approve true is approved; false, declined
// or dismissed is denied. The decision is recorded as made by the client.
func elicitApproval(ss *mcp.ServerSession) tools.ApprovalFunc {
	return func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
		p := ss.InitializeParams()
		if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
			return tools.ApprovalDecision{}, ErrNoElicitation
		}
		by := "mcp client"
		if p.ClientInfo != nil && p.ClientInfo.Name != "" {
			by += " " + p.ClientInfo.Name
		}
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{RequestedSchema: approvalSchema,
			Message: "Allow the browser action " + req.Summary + " (conversation " + req.ConversationID + ")?"})
		if err != nil {
			return tools.ApprovalDecision{}, err
		}
		switch res.Action {
		case "accept":
			ok, _ := res.Content["approve"].(bool)
			return tools.ApprovalDecision{Approved: ok, By: by}, nil
		case "decline":
			return tools.ApprovalDecision{By: by, Reason: "declined"}, nil
		}
		return tools.ApprovalDecision{By: by, Reason: "dismissed"}, nil
	}
}
