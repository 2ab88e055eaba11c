package hostproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The wire names (message types, headers, paths) are in package wire.

// RequestMessage is the host_browser_request message:
// {"type","requestId","conversationId","cdpMethod","cdpParams"?,"cdpSessionId"?,"timeout_seconds"?}.
type RequestMessage struct {
	Type           string          `json:"type"`
	RequestID      string          `json:"requestId"`
	ConversationID string          `json:"conversationId"`
	CDPMethod      string          `json:"cdpMethod"`
	CDPParams      json.RawMessage `json:"cdpParams,omitempty"`
	CDPSessionID   string          `json:"cdpSessionId,omitempty"`
	// TimeoutSeconds is the server's deadline for the request, in seconds,
	// so a client can bound its own work.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// CancelMessage is the host_browser_cancel message: {"type","requestId"}.
// A client that receives it must not post a result for that request.
type CancelMessage struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
}

// ResultBody is the body of POST /v1/host-browser-result:
// {"requestId","content","isError"}. Content is a string holding JSON: the
// CDP result object on success; on error an ErrorContent.
type ResultBody struct {
	RequestID string `json:"requestId"`
	Content   string `json:"content"`
	IsError   bool   `json:"isError"`

	// esc, when set, is the content still escaped in the received buffer
	// (see decodeResultOwned); resolve fills Content from it.
	esc *escapedContent
}

// EventBody is the body of POST /v1/host-browser-event: one CDP event the
// client observed, {"type"?,"method","params","cdpSessionId"?,"sessionId"?,
// "tabId"?}. The real Vellum extension sends {"type":"host_browser_event",
// "method","params"} and cdpSessionId only for a child session's event, so
// nothing in it names the tab; the reference extension adds tabId,
// the tab the event came from (decimal digits, as a string or a number);
// the desktop bridge names a session other than its page's in sessionId.
type EventBody struct {
	Type         string          `json:"type,omitempty"`
	Method       string          `json:"method"`
	Params       json.RawMessage `json:"params,omitempty"`
	CDPSessionID string          `json:"cdpSessionId,omitempty"`
	SessionID    string          `json:"sessionId,omitempty"`
	TabID        json.RawMessage `json:"tabId,omitempty"`
}

// Session is the session the event names: cdpSessionId or sessionId, else
// the tab id in decimal digits (a tab-level debuggee's events), else
// "".
func (b EventBody) Session() string {
	switch {
	case b.CDPSessionID != "":
		return b.CDPSessionID
	case b.SessionID != "":
		return b.SessionID
	}
	return b.Tab()
}

// Tab is the tabId the event names in decimal digits, or "".
func (b EventBody) Tab() string {
	if tab := strings.Trim(string(b.TabID), `"`); isTabID(tab) {
		return tab
	}
	return ""
}

// InvalidationBody is the body of POST /v1/host-browser-session-invalidated:
// {"sessionId"?,"targetId"?,"reason"?,"clientId"?}. The real extension sends
// {"type":"host_browser_session_invalidated","targetId":"<tab id>","reason":
// "tab_closed"|"target_closed","clientId"} and no client-id header; ClientID
// then names the posting client.
type InvalidationBody struct {
	SessionID string `json:"sessionId,omitempty"`
	TargetID  string `json:"targetId,omitempty"`
	Reason    string `json:"reason,omitempty"`
	ClientID  string `json:"clientId,omitempty"`
}

// ErrorContent is the JSON a client puts in ResultBody.Content when IsError is
// true. Code is either a JSON string (a transport-class code such as
// "unreachable") or a JSON number (a CDP error code such as -32601).
type ErrorContent struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// transportCodes are the string codes a client may report that make a result
// a transport error.
var transportCodes = map[string]bool{
	"transport_error":       true,
	"unreachable":           true,
	"timeout":               true,
	"non_loopback":          true,
	"cdp_session_not_found": true,
	"cancelled":             true,
	// The reference bridge's: the tab's renderer crashed under the command
	// (a transport error of its own code, as cdp-inspect reports it).
	"target_crashed": true,
}

// IsTransportCode reports whether code is one of the transport-class string
// codes of the wire contract.
func IsTransportCode(code string) bool { return transportCodes[code] }

// decodeStrict decodes exactly one JSON value into v; trailing data other
// than white space is an error. json.Unmarshal parses data in place (a
// json.Decoder would first copy the whole body into its own buffer, a cost
// that shows on screenshot-sized results).
func decodeStrict(data []byte, v any) error {
	return json.Unmarshal(data, v)
}

// DecodeResult parses a result body. It requires a JSON object; a missing
// requestId is reported by ErrNoRequestID so the route can answer 400.
func DecodeResult(data []byte) (ResultBody, error) {
	var b ResultBody
	if err := decodeStrict(data, &b); err != nil {
		return ResultBody{}, fmt.Errorf("hostproxy: malformed result body: %w", err)
	}
	if b.RequestID == "" {
		return ResultBody{}, ErrNoRequestID
	}
	return b, nil
}

// DecodeEvent parses an event body; method is required.
func DecodeEvent(data []byte) (EventBody, error) {
	var b EventBody
	if err := decodeStrict(data, &b); err != nil {
		return EventBody{}, fmt.Errorf("hostproxy: malformed event body: %w", err)
	}
	if b.Method == "" {
		return EventBody{}, errors.New("hostproxy: event body: method is required")
	}
	if len(b.Params) > 0 && !json.Valid(b.Params) {
		return EventBody{}, errors.New("hostproxy: event body: params is not JSON")
	}
	return b, nil
}

// DecodeInvalidation parses a session-invalidated body; at least one of
// sessionId and targetId is required.
func DecodeInvalidation(data []byte) (InvalidationBody, error) {
	var b InvalidationBody
	if err := decodeStrict(data, &b); err != nil {
		return InvalidationBody{}, fmt.Errorf("hostproxy: malformed session-invalidated body: %w", err)
	}
	if b.SessionID == "" && b.TargetID == "" {
		return InvalidationBody{}, errors.New("hostproxy: session-invalidated body: sessionId or targetId is required")
	}
	return b, nil
}

// ErrNoRequestID is returned by DecodeResult for a body without requestId.
var ErrNoRequestID = errors.New("hostproxy: result body has no requestId")
