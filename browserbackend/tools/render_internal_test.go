package tools

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/browserbackend"
)

// One rendering of every tool error: the op once, the code only when the
// cause does not already say it, the message only when the cause lacks it.
func TestToolErrorTextSaysEachThingOnce(t *testing.T) {
	navTimeout := &browserbackend.Error{Class: browserbackend.ClassTimeout, Code: browserbackend.CodeTimeout,
		Backend: browserbackend.KindLocal, Method: "Page.navigate", Dispatched: true,
		Message: "deadline passed before an answer (outcome unknown)", Err: context.DeadlineExceeded}
	protocol := browserbackend.ProtocolError(-32000, "Could not find node with given id")
	protocol.Backend, protocol.Method = browserbackend.KindLocal, "DOM.getBoxModel"
	waitTimeout := &Error{Op: "wait_for", Code: CodeTimeout, Message: `selector "#late" did not appear before the deadline`,
		Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a backend timeout", wrap("navigate", navTimeout),
			"tools: navigate: browserbackend: local Page.navigate timeout: deadline passed before an answer (outcome unknown): context deadline exceeded"},
		{"a backend protocol error", wrap("click", protocol),
			"tools: click: backend_error: browserbackend: local DOM.getBoxModel protocol/cdp_error (-32000): Could not find node with given id"},
		{"a wait that ran out", wrap("wait_for", waitTimeout),
			`tools: wait_for: timeout: selector "#late" did not appear before the deadline: context deadline exceeded`},
		{"a tool error wrapped again by the same op", &Error{Op: "wait_for", Code: CodeTimeout, Err: waitTimeout},
			`tools: wait_for: timeout: selector "#late" did not appear before the deadline: context deadline exceeded`},
		{"invalid input", invalidInput("links", "limit must be 1–200"), "tools: links: invalid_input: limit must be 1–200"},
	} {
		assert.Equal(t, tc.want, tc.err.Error(), tc.name)
	}
}
