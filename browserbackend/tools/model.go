package tools

import (
	"context"
	"encoding/json"
)

// Model is the language model behind the plain-language tools (Plain). It
// reads the page as the snapshot renders it (one element per line, with
// the ref the other tools take) and answers an instruction. Each method is
// called with the tool call's ctx, whose deadline is the call's, and must
// return once ctx is done; an error fails the call with CodeProviderError
// (CodeTimeout when ctx ended). Implementations must be safe for
// concurrent use and must not keep req after they return.
type Model interface {
	// Act plans the actions that carry out req.Instruction.
	Act(ctx context.Context, req ModelRequest) (ActPlan, error)
	// Observe finds the elements req.Instruction describes; none is an
	// empty answer, not an error.
	Observe(ctx context.Context, req ModelRequest) ([]ObservedElement, error)
	// Extract answers req.Instruction from the page: as Text, or, when
	// req.Schema is set, as Data valid against it.
	Extract(ctx context.Context, req ModelRequest) (ExtractAnswer, error)
}

// ModelRequest is what a Model is asked.
type ModelRequest struct {
	ConversationID string
	// Instruction is the agent's, in plain language; "" for an extract
	// that gives only a Schema.
	Instruction string
	// Schema is the JSON Schema an extract's Data must satisfy; nil for
	// Act, Observe and a text extract.
	Schema json.RawMessage
	Page   PageView
}

// PageView is the page a Model reads.
type PageView struct {
	URL   string
	Title string
	// Snapshot is SnapshotResult.Text: the tree, one element per line,
	// e.g. `- button "Send" [ref=e42]`.
	Snapshot string
	// Truncated is set when the snapshot was cut (DefaultSnapshotMaxNodes).
	Truncated bool
}

// The actions a plan may hold (PlannedAction.Action).
const (
	// PlanClick clicks the element.
	PlanClick = "click"
	// PlanType replaces the field's text with Text, pressing Enter after
	// when Submit is set.
	PlanType = "type"
	// PlanSelect selects the options Values of a <select>.
	PlanSelect = "select"
)

// MaxPlanActions bounds the actions of one plan.
const MaxPlanActions = 8

// ActPlan is the model's answer to an act: the actions to run, in order.
// An empty plan fails the act with CodeProviderError.
type ActPlan struct {
	Actions []PlannedAction `json:"actions"`
}

// PlannedAction is one action of a plan, on an element the snapshot
// showed (Ref).
type PlannedAction struct {
	// Action is PlanClick, PlanType or PlanSelect.
	Action string `json:"action"`
	Ref    string `json:"ref"`
	// Text is what PlanType types; it is not echoed in ActResult.
	Text   string `json:"text,omitempty"`
	Submit bool   `json:"submit,omitempty"`
	// Values are what PlanSelect selects.
	Values []string `json:"values,omitempty"`
}

// ObservedElement is one element an observe found.
type ObservedElement struct {
	Ref         string `json:"ref"`
	Description string `json:"description"`
}

// ExtractAnswer is the model's answer to an extract: Text, or Data when
// the request had a Schema.
type ExtractAnswer struct {
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}
