package hostproxy

import (
	"encoding/json"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
)

// ErrorAnswer is what a client's isError content says, once parsed.
// Exactly one of StringCode and CDPCode is set, unless Malformed.
type ErrorAnswer struct {
	// StringCode is a wire code ("unreachable", "target_not_found", …).
	StringCode string
	// CDPCode is a JSON-RPC code (-32601, …); HasCDPCode tells it is set.
	CDPCode    int
	HasCDPCode bool
	// Message is the innermost message.
	Message string
	// Malformed is true for a JSON object without a usable code: a broken
	// answer rather than an error from the browser.
	Malformed bool
}

// maxErrorNesting bounds how many times a CDP error may be wrapped inside
// another's message.
const maxErrorNesting = 4

// ParseErrorAnswer parses the content of a result with isError true.
// The answers clients send are:
//   - a structured error {"code","message"}: code a wire string or a CDP
//     number. A CDP error's message may itself be the JSON of a CDP error
//     (the real extension encodes chrome.debugger's error twice:
//     {"code":-32000,"message":"{\"code\":-32601,…}"}); the innermost code
//     and message are returned;
//   - plain text (the real extension's attach and resolve failures, e.g.
//     "No tab with given id 7." or "Cannot access a chrome:// URL"), also as
//     a JSON string: mapped by ClassifyErrorText to target_not_found,
//     forbidden_target or client_error;
//   - a JSON object without a usable code: Malformed.
//
// This is the one place that reads a client's error text.
func ParseErrorAnswer(content string) ErrorAnswer {
	trimmed := strings.TrimSpace(content)
	if strings.HasPrefix(trimmed, `"`) {
		var s string
		if json.Unmarshal([]byte(trimmed), &s) == nil {
			return ErrorAnswer{StringCode: ClassifyErrorText(s), Message: s}
		}
	}
	if !strings.HasPrefix(trimmed, "{") {
		return ErrorAnswer{StringCode: ClassifyErrorText(trimmed), Message: trimmed}
	}
	var ec ErrorContent
	if err := json.Unmarshal([]byte(trimmed), &ec); err != nil {
		return ErrorAnswer{StringCode: ClassifyErrorText(trimmed), Message: trimmed}
	}
	out, ok := codeOf(ec)
	if !ok {
		return ErrorAnswer{Message: ec.Message, Malformed: true}
	}
	for range maxErrorNesting {
		if !out.HasCDPCode {
			break
		}
		var inner ErrorContent
		m := strings.TrimSpace(out.Message)
		if !strings.HasPrefix(m, "{") || json.Unmarshal([]byte(m), &inner) != nil {
			break
		}
		next, ok := codeOf(inner)
		if !ok || !next.HasCDPCode {
			break
		}
		out = next
	}
	return out
}

// codeOf reads ec's code: a non-empty string or a 32-bit integer.
func codeOf(ec ErrorContent) (ErrorAnswer, bool) {
	if len(ec.Code) == 0 {
		return ErrorAnswer{}, false
	}
	var s string
	if json.Unmarshal(ec.Code, &s) == nil {
		return ErrorAnswer{StringCode: s, Message: ec.Message}, s != "" // null and "" are no code
	}
	var n json.Number
	dec := json.NewDecoder(strings.NewReader(string(ec.Code)))
	dec.UseNumber()
	if dec.Decode(&n) != nil {
		return ErrorAnswer{}, false
	}
	i, err := n.Int64()
	if err != nil || i < -1<<31 || i >= 1<<31 {
		return ErrorAnswer{}, false
	}
	return ErrorAnswer{CDPCode: int(i), HasCDPCode: true, Message: ec.Message}, true
}

// errorTexts maps phrases of Chrome's and the extension's plain-text
// failures to a wire error code; the first match wins, compared case-blind.
var errorTexts = []struct{ phrase, code string }{
	{"no tab with given id", browserbackend.CodeTargetNotFound},
	{"no target with given id", browserbackend.CodeTargetNotFound},
	{"no frame with given id", browserbackend.CodeTargetNotFound},
	{"no window with id", browserbackend.CodeTargetNotFound},
	{"cannot find tab", browserbackend.CodeTargetNotFound},
	{"cannot find target", browserbackend.CodeTargetNotFound},
	{"cannot access a chrome://", browserbackend.CodeForbiddenTarget},
	{"cannot access a chrome-extension://", browserbackend.CodeForbiddenTarget},
	{"cannot access contents of", browserbackend.CodeForbiddenTarget},
	{"cannot attach to this target", browserbackend.CodeForbiddenTarget},
	{"extensions gallery cannot be scripted", browserbackend.CodeForbiddenTarget},
	{"another debugger is already attached", browserbackend.CodeForbiddenTarget},
}

// ClassifyErrorText maps a client's plain-text error to target_not_found,
// forbidden_target or client_error.
func ClassifyErrorText(text string) string {
	low := strings.ToLower(text)
	for _, t := range errorTexts {
		if strings.Contains(low, t.phrase) {
			return t.code
		}
	}
	return browserbackend.CodeClientError
}
