package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/internal/textcap"
)

// The actions Options.Approvals may name, and the tool ops each one gates.
const (
	ApproveGoto        = "goto"         // navigate, navigate_back, navigate_forward, reload
	ApproveClick       = "click"        // click, drag
	ApproveType        = "type"         // type, press_key, fill_form, select_option, file_upload
	ApproveAct         = "act"          // act (its planned actions are gated by their own names)
	ApproveExtract     = "extract"      // extract, with or without an instruction
	ApproveObserve     = "observe"      // observe
	ApproveLinks       = "links"        // links
	ApproveScreenshot  = "screenshot"   // screenshot, pdf
	ApproveLogin       = "login"        // login
	ApproveSignup      = "signup"       // no tool of this package signs up
	ApproveSaveContext = "save_context" // save_context
)

// approvalOps maps each action to the tool ops it gates.
var approvalOps = map[string][]string{
	ApproveGoto:        {"navigate", "navigate_back", "navigate_forward", "reload"},
	ApproveClick:       {"click", "drag"},
	ApproveType:        {"type", "press_key", "fill_form", "select_option", "file_upload"},
	ApproveAct:         {"act"},
	ApproveExtract:     {"extract"},
	ApproveObserve:     {"observe"},
	ApproveLinks:       {"links"},
	ApproveScreenshot:  {"screenshot", "pdf"},
	ApproveLogin:       {"login"},
	ApproveSignup:      nil,
	ApproveSaveContext: {"save_context"},
}

// Approval error codes: a call that needed the operator's approval and did
// not get it. Nothing was sent to a browser.
const (
	// CodeApprovalDenied: the approver said no.
	CodeApprovalDenied = "approval_denied"
	// CodeApprovalTimeout: no decision came before the call's deadline
	// (or ctx ended); the wrapped error is ctx's.
	CodeApprovalTimeout = "approval_timeout"
	// CodeApprovalUnavailable: there was no one to ask: no approver is
	// configured, the MCP client cannot elicit, or the approver failed
	// (the wrapped error).
	CodeApprovalUnavailable = "approval_unavailable"
)

// Sentinels of the approval codes, for errors.Is.
var (
	ErrApprovalDenied      = &Error{Code: CodeApprovalDenied}
	ErrApprovalTimeout     = &Error{Code: CodeApprovalTimeout}
	ErrApprovalUnavailable = &Error{Code: CodeApprovalUnavailable}
)

// ApprovalRequest is what an approver is asked. It never holds typed text
// or vault values.
type ApprovalRequest struct {
	ConversationID   string
	ActorPrincipalID string
	// Action is the name Options.Approvals lists (ApproveClick, …); Op the
	// tool op that asks ("click", "drag", …).
	Action string
	Op     string
	// Target is what the call acts on: the URL to load, an element's ref
	// or selector, an instruction, a credential's name; "" for none.
	Target string
	// Summary is one line for a person: the op and its target.
	Summary string
}

// ApprovalDecision is an approver's answer.
type ApprovalDecision struct {
	Approved bool
	// By names who decided (an operator's id, an MCP client's name); it
	// goes into the conversation's record.
	By string
	// Reason, optional, is recorded and, on a denial, returned.
	Reason string
}

// ApprovalFunc decides whether a call may run. It is called on its own
// goroutine with the call's ctx, whose deadline is the call's: the call
// waits for the answer until then and fails CodeApprovalTimeout after it,
// so an ApprovalFunc must return once ctx is done. An error is
// CodeApprovalUnavailable. It must be safe for concurrent use.
type ApprovalFunc func(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)

type approverKey struct{}

// WithApprover returns a ctx under which tool calls ask fn instead of
// Options.Approve (a front end that asks the user of each session, as the
// MCP server does through elicitation).
func WithApprover(ctx context.Context, fn ApprovalFunc) context.Context {
	return context.WithValue(ctx, approverKey{}, fn)
}

func (t *Tools) approverFor(ctx context.Context) ApprovalFunc {
	if fn, ok := ctx.Value(approverKey{}).(ApprovalFunc); ok && fn != nil {
		return fn
	}
	return t.approve
}

// ApprovalActions returns the action names Options.Approvals accepts,
// sorted.
func ApprovalActions() []string {
	names := make([]string, 0, len(approvalOps))
	for n := range approvalOps {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CheckApprovals returns nil when every name is an action
// Options.Approvals accepts (ApprovalActions), else an *Error with
// CodeValidationFailed (param "approvals") naming the first unknown one.
// New panics with that error, so a host taking the list from its
// configuration checks it first.
func CheckApprovals(names []string) error {
	for _, n := range names {
		if _, ok := approvalOps[n]; !ok {
			return guardErr("approvals", &guard.Error{Code: guard.CodeValidationFailed, Param: "approvals",
				Message: fmt.Sprintf("unknown action %q; known: %s", n, strings.Join(ApprovalActions(), ", "))})
		}
	}
	return nil
}

// gatedOps returns the set of ops the actions gate; it panics with
// CheckApprovals' error on an unknown name.
func gatedOps(names []string) map[string]string {
	if err := CheckApprovals(names); err != nil {
		panic(err)
	}
	ops := map[string]string{}
	for _, n := range names {
		for _, op := range approvalOps[n] {
			ops[op] = n
		}
	}
	return ops
}

// maxApprovalTarget bounds ApprovalRequest.Target (a long instruction or
// data: URL is cut).
const maxApprovalTarget = 200

// askApproval asks for the approval of a call of op when Options.Approvals
// gates it, records the outcome in rc and returns nil when the call may
// run. It runs before any backend is contacted.
func (t *Tools) askApproval(ctx context.Context, rc *recorder.Call, inv browserbackend.Invocation, op, target string) error {
	action, gated := t.gated[op]
	if !gated {
		return nil
	}
	target = textcap.Cut(target, maxApprovalTarget)
	req := ApprovalRequest{ConversationID: inv.ConversationID, ActorPrincipalID: inv.ActorPrincipalID,
		Action: action, Op: op, Target: target, Summary: op}
	if target != "" {
		req.Summary = op + " " + target
	}
	d, err := decide(ctx, t.approverFor(ctx), req)
	outcome, who := "approved", d.By
	switch {
	case err != nil:
		outcome = "unavailable"
		if errors.Is(err, ErrApprovalTimeout) {
			outcome = "timed out"
		}
		err = wrap(op, err)
	case !d.Approved:
		outcome = "denied"
		msg := "the operator denied it"
		if d.By != "" {
			msg = d.By + " denied it"
		}
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
		err = &Error{Op: op, Code: CodeApprovalDenied, Message: msg}
	}
	detail := req.Summary
	if who != "" {
		detail += " (by " + who + ")"
	}
	if d.Reason != "" {
		detail += ": " + d.Reason
	}
	rc.Event(recorder.PageEvent{Type: "approval", Detail: detail, Handled: outcome})
	t.log.Debug("browser tool approval", "op", op, "action", action, "conversationId", inv.ConversationID,
		"outcome", outcome, "by", who)
	return err
}

// decide runs fn on its own goroutine and waits for its answer or ctx.
// Its error is an *Error with CodeApprovalTimeout or
// CodeApprovalUnavailable (no Op).
func decide(ctx context.Context, fn ApprovalFunc, req ApprovalRequest) (ApprovalDecision, error) {
	if fn == nil {
		return ApprovalDecision{}, &Error{Code: CodeApprovalUnavailable, Message: "no approver is configured"}
	}
	type answer struct {
		d   ApprovalDecision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		d, err := fn(ctx, req)
		ch <- answer{d, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		select {
		case a = <-ch: // answered as the deadline passed: the answer counts
		default:
			return ApprovalDecision{}, &Error{Code: CodeApprovalTimeout, Message: "no decision before the deadline", Err: ctx.Err()}
		}
	}
	switch {
	case a.err != nil && ctx.Err() != nil:
		return ApprovalDecision{}, &Error{Code: CodeApprovalTimeout, Message: "no decision before the deadline", Err: ctx.Err()}
	case a.err != nil:
		return ApprovalDecision{}, &Error{Code: CodeApprovalUnavailable, Message: "no decision could be obtained", Err: a.err}
	}
	return a.d, nil
}

// about is t for an approval request, "" when empty.
func (t Target) about() string {
	if t.empty() {
		return ""
	}
	return t.String()
}
