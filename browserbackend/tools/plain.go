package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
)

// DefaultPlainTimeout is the deadline of a plain-language call (the model's
// answer and, for Act, the actions it planned) when TimeoutMs is 0.
const DefaultPlainTimeout = 60 * time.Second

// Bounds of the plain-language inputs (CodeInvalidInput).
const (
	MaxInstructionBytes = 4 << 10
	MaxSchemaBytes      = 64 << 10
)

// CodeProviderError: a dependency failed: the vault, or the model behind
// the plain-language tools (its error, an empty plan, an action of its plan
// that failed, an answer that names no element of the page or does not
// match the schema).
const CodeProviderError = guard.CodeProviderError

// ErrProviderError matches CodeProviderError, for errors.Is.
var ErrProviderError = &Error{Code: CodeProviderError}

// PlainTools are the plain-language tools: the Model reads the page's
// snapshot and answers an instruction. Without Options.Model every call
// fails feature_not_configured before any backend is contacted; the other
// tools work as ever. It is a view of its Tools and as safe for concurrent
// use.
type PlainTools struct{ t *Tools }

// Plain returns the plain-language tools.
func (t *Tools) Plain() PlainTools { return PlainTools{t} }

// ActInput is the act tool input.
type ActInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Instruction says what to do, e.g. "open the pricing menu".
	Instruction string `json:"instruction"`
}

// ActResult is what Act did: Performed is always true (nothing done is an
// error), Actions the plan it ran, without typed text.
type ActResult struct {
	// URL is the page's URL afterwards.
	URL       string    `json:"url"`
	Performed bool      `json:"performed"`
	Actions   []ActStep `json:"actions"`
	// Call is the planning call's (the actions are calls of their own).
	Call
}

// ActStep is one action Act ran and what it caused.
type ActStep struct {
	PlannedAction
	Effects
}

// ObserveInput is the observe tool input.
type ObserveInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Instruction describes the elements to find, e.g. "the date pickers".
	Instruction string `json:"instruction"`
}

// ObserveResult lists the elements Observe found, possibly none.
type ObserveResult struct {
	URL      string            `json:"url"`
	Elements []ObservedElement `json:"elements"`
	Call
}

// check is what every plain-language call checks before a backend is
// contacted: a model, and the instruction's size.
func (pt PlainTools) check(op, instruction string, required bool) error {
	if pt.t.model == nil {
		return guardErr(op, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "model",
			Message: "no model is configured for plain-language actions"})
	}
	switch {
	case required && instruction == "":
		return invalidInput(op, "instruction is required")
	case len(instruction) > MaxInstructionBytes:
		return invalidInput(op, "instruction is over "+strconv.Itoa(MaxInstructionBytes)+" bytes")
	}
	return nil
}

func (pt PlainTools) request(inv browserbackend.Invocation, instruction string, schema json.RawMessage, v PageView) ModelRequest {
	return ModelRequest{ConversationID: inv.ConversationID, Instruction: instruction, Schema: schema, Page: v}
}

// view snapshots the page (the subtree of ref, when set) for the model
// and returns the refs it shows.
func view(ctx context.Context, p *Page, ref string) (PageView, map[string]bool, error) {
	res, err := p.Snapshot(ctx, SnapshotInput{Ref: ref})
	if err != nil {
		return PageView{}, nil, err
	}
	refs := make(map[string]bool, len(res.Nodes))
	for _, n := range res.Nodes {
		if n.Ref != "" {
			refs[n.Ref] = true
		}
	}
	return PageView{URL: res.URL, Title: res.Title, Snapshot: res.Text, Truncated: res.Truncated}, refs, nil
}

// redact removes e-mails, phone and card numbers from what the model is
// shown of a page whose reads are redacted (a reopened saved login), so
// that neither the model nor what it returns holds them.
func (pt PlainTools) redact(inv browserbackend.Invocation, v *PageView) {
	if pt.t.redacting(inv) {
		v.URL, v.Title, v.Snapshot = Redact(v.URL), Redact(v.Title), Redact(v.Snapshot)
	}
}

// modelErr is the error of a model call: CodeTimeout when ctx ended,
// else CodeProviderError.
func modelErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return &Error{Op: op, Code: CodeTimeout, Message: "the model did not answer before the deadline", Err: err}
	}
	return &Error{Op: op, Code: CodeProviderError, Message: "the model failed", Err: err}
}

func providerErr(op, msg string) error {
	return &Error{Op: op, Code: CodeProviderError, Message: msg}
}

// Observe is the observe tool: the model names the elements the
// instruction describes, each by a ref of the page's snapshot, without
// touching them. A ref the snapshot does not show is CodeProviderError.
func (pt PlainTools) Observe(ctx context.Context, inv browserbackend.Invocation, in ObserveInput) (ObserveResult, error) {
	const op = "observe"
	return run(pt.t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultPlainTimeout, read: true,
		check: func() error { return pt.check(op, in.Instruction, true) }, about: strconv.Quote(in.Instruction)},
		func(ctx context.Context, p *Page) (ObserveResult, error) {
			v, refs, err := view(ctx, p, "")
			if err != nil {
				return ObserveResult{}, err
			}
			pt.redact(inv, &v)
			els, err := pt.t.model.Observe(ctx, pt.request(inv, in.Instruction, nil, v))
			if err != nil {
				return ObserveResult{}, modelErr(ctx, op, err)
			}
			for _, el := range els {
				if !refs[el.Ref] {
					return ObserveResult{}, providerErr(op, fmt.Sprintf("the model named ref %q, which the page does not show", el.Ref))
				}
			}
			if els == nil {
				els = []ObservedElement{}
			}
			return ObserveResult{URL: v.URL, Elements: els}, nil
		})
}

// Extract is the extract tool with an Instruction or a Schema (at least
// one): the model answers from the page's snapshot (narrowed to the
// subtree of in.Ref when set; a selector or MaxChars is CodeInvalidInput)
// with text, or with Data valid against in.Schema (ExtractResult.Text then
// holds the same JSON). A schema that does not resolve is
// CodeInvalidInput; data that does not satisfy it is CodeProviderError.
func (pt PlainTools) Extract(ctx context.Context, inv browserbackend.Invocation, in ExtractInput) (ExtractResult, error) {
	const op = "extract"
	var schema *jsonschema.Resolved
	about := strconv.Quote(in.Instruction)
	if in.Instruction == "" {
		about = "data by a schema"
	}
	return run(pt.t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultPlainTimeout, read: true,
		check: func() error {
			if err := pt.check(op, in.Instruction, len(in.Schema) == 0); err != nil {
				return err
			}
			if in.Selector != "" || in.MaxChars != 0 {
				return invalidInput(op, "with instruction or schema, only ref narrows the page")
			}
			if in.Ref != "" {
				if err := checkTarget(op, in.Target); err != nil {
					return err
				}
			}
			var err error
			schema, err = resolveSchema(op, in.Schema)
			return err
		}, about: about},
		func(ctx context.Context, p *Page) (ExtractResult, error) {
			v, _, err := view(ctx, p, in.Ref)
			if err != nil {
				return ExtractResult{}, err
			}
			pt.redact(inv, &v)
			ans, err := pt.t.model.Extract(ctx, pt.request(inv, in.Instruction, in.Schema, v))
			if err != nil {
				return ExtractResult{}, modelErr(ctx, op, err)
			}
			res := ExtractResult{URL: v.URL, Ref: in.Ref, Text: ans.Text}
			if schema != nil {
				if res.Data, err = checkData(op, schema, ans.Data); err != nil {
					return ExtractResult{}, err
				}
				res.Text = string(res.Data)
			}
			res.Length = utf16Units(res.Text)
			return res, nil
		})
}

// utf16Units is s's length in UTF-16 code units.
func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// resolveSchema parses and resolves a schema; nil for none.
func resolveSchema(op string, raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > MaxSchemaBytes {
		return nil, invalidInput(op, "schema is over "+strconv.Itoa(MaxSchemaBytes)+" bytes")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalidInput(op, "schema is not a JSON Schema: "+err.Error())
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, invalidInput(op, "schema does not resolve: "+err.Error())
	}
	return r, nil
}

// checkData returns the model's data, compacted, when it satisfies schema.
func checkData(op string, schema *jsonschema.Resolved, data json.RawMessage) (json.RawMessage, error) {
	var v any
	if len(data) == 0 || json.Unmarshal(data, &v) != nil {
		return nil, providerErr(op, "the model's answer has no JSON data")
	}
	if err := schema.Validate(v); err != nil {
		return nil, &Error{Op: op, Code: CodeProviderError, Message: "the model's data does not satisfy the schema", Err: err}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, providerErr(op, "the model's data cannot be encoded")
	}
	return out, nil
}

// actPlanned is the planning half of Act.
type actPlanned struct {
	URL  string
	Plan ActPlan
	Call
}

// Act is the act tool: the model plans the actions that carry out the
// instruction on the page's snapshot (at most MaxPlanActions, each a
// click, a type or a select on a ref the snapshot shows), and each runs
// as the Act facet's call of its own (ActTools.Click, Type with Clear,
// SelectOption), so the guard and Options.Approvals apply to it as to
// any such call; under a guard without allow_writes an instruction that
// looks like a write is refused before the model is asked. The deadline (TimeoutMs, else DefaultPlainTimeout)
// bounds the plan and every action. Act never reports a quiet success: an
// empty plan, a plan that names an element the snapshot does not show or
// an action that fails is CodeProviderError (wrapping the action's
// error); a refusal (a guard's, an approval's) and an open dialog keep
// their code.
func (pt PlainTools) Act(ctx context.Context, inv browserbackend.Invocation, in ActInput) (ActResult, error) {
	const op = "act"
	ctx, cancel, err := deadline(ctx, op, in.TimeoutMs, DefaultPlainTimeout)
	if err != nil {
		return ActResult{}, err
	}
	defer cancel()
	planned, err := run(pt.t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultPlainTimeout,
		check: func() error { return pt.check(op, in.Instruction, true) }, about: strconv.Quote(in.Instruction),
		act: instructionCheck(op, in.Instruction)},
		func(ctx context.Context, p *Page) (actPlanned, error) {
			v, refs, err := view(ctx, p, "")
			if err != nil {
				return actPlanned{}, err
			}
			plan, err := pt.t.model.Act(ctx, pt.request(inv, in.Instruction, nil, v))
			if err != nil {
				return actPlanned{}, modelErr(ctx, op, err)
			}
			if err := checkPlan(op, plan, refs); err != nil {
				return actPlanned{}, err
			}
			return actPlanned{URL: v.URL, Plan: plan}, nil
		})
	if err != nil {
		return ActResult{}, err
	}
	res := ActResult{URL: planned.URL, Performed: true, Call: planned.Call}
	for i, a := range planned.Plan.Actions {
		eff, err := pt.perform(ctx, inv, in.BrowserMode, a)
		if err != nil {
			return ActResult{}, stepErr(op, i, a, err)
		}
		if eff.Navigated != nil {
			res.URL = eff.Navigated.URL
		}
		a.Text = ""
		res.Actions = append(res.Actions, ActStep{PlannedAction: a, Effects: eff})
	}
	return res, nil
}

// instructionCheck is the write guard of an act's instruction, run under
// a guard before the model is asked: without allow_writes, an instruction
// that says submit, buy, delete, send … is refused. Each planned action
// passes the write guard of its own tool too.
func instructionCheck(op, instruction string) func(context.Context, *Page, *guard.Guard) error {
	return func(_ context.Context, _ *Page, g *guard.Guard) error {
		if g.AllowWrites() {
			return nil
		}
		if m := writeWords.FindString(instruction); m != "" {
			return guardErr(op, &guard.Error{Code: guard.CodeForbidden, Param: "allow_writes", Rule: guard.RuleAllowWrites,
				Message: "the instruction looks like a write (it says " + strings.ToLower(m) + ") and allow_writes is off"})
		}
		return nil
	}
}

// checkPlan refuses an empty or oversized plan, an unknown action and a
// ref the snapshot did not show.
func checkPlan(op string, plan ActPlan, refs map[string]bool) error {
	switch n := len(plan.Actions); {
	case n == 0:
		return providerErr(op, "the model planned no action: nothing was done")
	case n > MaxPlanActions:
		return providerErr(op, fmt.Sprintf("the model planned %d actions; at most %d run", n, MaxPlanActions))
	}
	for i, a := range plan.Actions {
		switch {
		case a.Action != PlanClick && a.Action != PlanType && a.Action != PlanSelect:
			return providerErr(op, fmt.Sprintf("planned action %d is %q, not click, type or select", i+1, a.Action))
		case !refs[a.Ref]:
			return providerErr(op, fmt.Sprintf("planned action %d names ref %q, which the page does not show", i+1, a.Ref))
		case a.Action == PlanSelect && len(a.Values) == 0:
			return providerErr(op, fmt.Sprintf("planned action %d selects no value", i+1))
		}
	}
	return nil
}

// perform runs one planned action through the Act facet.
func (pt PlainTools) perform(ctx context.Context, inv browserbackend.Invocation, mode string, a PlannedAction) (Effects, error) {
	t := Target{Ref: a.Ref}
	switch a.Action {
	case PlanType:
		r, err := pt.t.Act().Type(ctx, inv, TypeInput{BrowserMode: mode, Target: t, Text: a.Text, Clear: true, Submit: a.Submit})
		return r.Effects, err
	case PlanSelect:
		r, err := pt.t.Act().SelectOption(ctx, inv, SelectOptionInput{BrowserMode: mode, Target: t, Values: a.Values})
		return r.Effects, err
	}
	r, err := pt.t.Act().Click(ctx, inv, ElementInput{BrowserMode: mode, Target: t})
	return r.Effects, err
}

// keptCodes are the codes an act keeps from a failed action: refusals and
// an open dialog are not the model's failure.
var keptCodes = map[string]bool{
	CodeForbidden: true, CodeValidationFailed: true, CodeDialogOpen: true,
	CodeApprovalDenied: true, CodeApprovalTimeout: true, CodeApprovalUnavailable: true,
}

// stepErr is the act's error for its action i that failed with err.
func stepErr(op string, i int, a PlannedAction, err error) error {
	code := CodeProviderError
	var te *Error
	if errors.As(err, &te) && keptCodes[te.Code] {
		code = te.Code
	}
	return &Error{Op: op, Code: code, Message: fmt.Sprintf("planned action %d (%s %s) failed", i+1, a.Action, a.Ref), Err: err}
}
