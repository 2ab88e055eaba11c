package recorder

import (
	"time"

	"github.com/browserchain/browserchain/browserbackend"
)

// Type says what an Entry records.
type Type string

// The entry types.
const (
	// TypeCall is a tool call's summary, recorded when it ends: op,
	// backend, tab, duration and outcome.
	TypeCall Type = "call"
	// TypeAttempt is one candidate of the call's backend selection.
	TypeAttempt Type = "attempt"
	// TypeCDP is one CDP command the call sent.
	TypeCDP Type = "cdp"
	// TypeGuard is a decision of the browser policy on the call.
	TypeGuard Type = "guard"
	// TypeEvent is something the page did during the call (a dialog).
	TypeEvent Type = "event"
	// TypeScreenshot is a screenshot the call took.
	TypeScreenshot Type = "screenshot"
)

// Entry is one line of a conversation's record. Fields not relevant to its
// Type are zero (and omitted from JSON). Entries of one call share Call;
// Seq orders a conversation's entries as they were recorded.
type Entry struct {
	Seq          uint64    `json:"seq"`
	Time         time.Time `json:"time"`
	Conversation string    `json:"conversation"`
	// Call numbers the conversation's tool calls from 1.
	Call uint64 `json:"call"`
	Type Type   `json:"type"`
	// Op is the tool call's operation ("navigate", "click", …).
	Op string `json:"op,omitempty"`
	// Duration is the call's, attempt's or command's duration. JSON:
	// nanoseconds, as Time is RFC 3339.
	Duration time.Duration `json:"duration,omitempty"`
	Backend  string        `json:"backend,omitempty"`
	// Tab is the backend's id of the call's tab.
	Tab string `json:"tab,omitempty"`
	// Outcome is "ok" or "error".
	Outcome string `json:"outcome,omitempty"`
	// Code is the failure's machine-readable code.
	Code string `json:"code,omitempty"`
	// Error is the failure's text, capped.
	Error string `json:"error,omitempty"`

	Attempt *browserbackend.Attempt `json:"attempt,omitempty"`
	// Failover marks an attempt followed by another because it failed, or
	// because it was the conversation's remembered backend and was gone.
	Failover bool           `json:"failover,omitempty"`
	Command  *Command       `json:"cdp,omitempty"`
	Guard    *GuardDecision `json:"guard,omitempty"`
	Event    *PageEvent     `json:"event,omitempty"`
	Shot     *Shot          `json:"shot,omitempty"`
}

// Command is a recorded CDP command.
type Command struct {
	Method string `json:"method"`
	// SessionID is the flat session the command was sent on, "" for the
	// page's own.
	SessionID string `json:"sessionId,omitempty"`
	// ParamsBytes and ResultBytes are the sizes of the encoded params and
	// of the answer's result.
	ParamsBytes int `json:"paramsBytes"`
	ResultBytes int `json:"resultBytes"`
	// Params is the redacted form of the params, at most
	// Options.MaxParamBytes; "" when redacted entirely (Redacted).
	Params   string `json:"params,omitempty"`
	Redacted bool   `json:"redacted,omitempty"`
}

// GuardDecision is what the browser policy decided about a call: Allowed,
// or refused with the guard's code, parameter, rule and URL.
type GuardDecision struct {
	Allowed bool   `json:"allowed"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
	Rule    string `json:"rule,omitempty"`
	URL     string `json:"url,omitempty"`
	Message string `json:"message,omitempty"`
}

// PageEvent is something the page did: Type "dialog" (Detail the dialog's
// kind and message, Handled how it was answered), "popup" (URL the window
// an action opened) or "navigation" (URL and, as Detail, the title of the
// page an action navigated to); or the approval the call waited for: Type
// "approval", Detail what was asked and who decided, Handled "approved",
// "denied", "timed out" or "unavailable".
type PageEvent struct {
	Type    string `json:"type"`
	Detail  string `json:"detail,omitempty"`
	URL     string `json:"url,omitempty"`
	Handled string `json:"handled,omitempty"`
}

// Shot is a screenshot the call took. Data holds the image's bytes when
// they fit Options.MaxShotBytes, else nil (the file is only referenced).
type Shot struct {
	Path      string `json:"path,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
	Size      int64  `json:"size,omitempty"`
	URL       string `json:"url,omitempty"`
	Data      []byte `json:"data,omitempty"`
}

// entryOverhead is what an Entry costs besides its strings and byte slices:
// the struct, its pointers' targets and the ring's slot.
const entryOverhead = 320

// size is the memory an entry holds, approximately, in bytes.
func (e *Entry) size() int {
	n := entryOverhead + len(e.Conversation) + len(e.Op) + len(e.Backend) + len(e.Tab) +
		len(e.Outcome) + len(e.Code) + len(e.Error)
	if a := e.Attempt; a != nil {
		n += len(a.Kind) + len(a.Reason) + len(a.Code) + len(a.Message) + len(a.Detail)
	}
	if c := e.Command; c != nil {
		n += len(c.Method) + len(c.SessionID) + len(c.Params)
	}
	if g := e.Guard; g != nil {
		n += len(g.Code) + len(g.Param) + len(g.Rule) + len(g.URL) + len(g.Message)
	}
	if ev := e.Event; ev != nil {
		n += len(ev.Type) + len(ev.Detail) + len(ev.URL) + len(ev.Handled)
	}
	if s := e.Shot; s != nil {
		n += len(s.Path) + len(s.SHA256) + len(s.MediaType) + len(s.URL) + len(s.Data)
	}
	return n
}
