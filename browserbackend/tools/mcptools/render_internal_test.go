package mcptools

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// Every failure's text names the tool, the cause and the next step.
func TestErrorTextSaysWhatToDo(t *testing.T) {
	sel := &browserbackend.SelectionError{Mode: browserbackend.Mode("extension"), Pinned: true,
		Attempts:    []browserbackend.Attempt{{Kind: browserbackend.KindExtension, Stage: "candidate_selection", Code: "no_client", Message: "no extension"}},
		Remediation: []string{"Open Chrome and pair the extension."}}
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"selection", &tools.Error{Op: "navigate", Code: tools.CodeBackend, Err: sel},
			[]string{`Requested browser_mode "extension" is unavailable.`, "1. extension", "To fix:\n  - Open Chrome and pair the extension.", "browser_status"}},
		{"not found", &tools.Error{Op: "click", Code: tools.CodeNotFound, Message: `no element matches selector "#x"`},
			[]string{"browser_click", `no element matches selector "#x"`, "Take a new browser_snapshot"}},
		{"timeout", &tools.Error{Op: "wait_for", Code: tools.CodeTimeout, Message: "deadline passed"},
			[]string{"browser_wait_for timed out", "Raise timeout_ms (at most 300000)"}},
		{"invalid input", &tools.Error{Op: "type", Code: tools.CodeInvalidInput, Message: "ref or selector is required"},
			[]string{"browser_type refused: ref or selector is required", "Fix the arguments"}},
		{"navigation", &tools.Error{Op: "navigate", Code: tools.CodeNavigationFailed, Message: "net::ERR_NAME_NOT_RESOLVED"},
			[]string{"net::ERR_NAME_NOT_RESOLVED", "Check the URL"}},
		{"transport", &tools.Error{Op: "extract", Code: tools.CodeBackend,
			Err: &browserbackend.Error{Class: browserbackend.ClassTransport, Code: "unreachable", Message: "socket closed"}},
			[]string{"browser_extract: the browser stopped answering", "socket closed", "Call again"}},
		{"closed", ErrClosed, []string{"shutting down"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := toolError{c.err}.Error()
			for _, w := range c.want {
				assert.Contains(t, got, w)
			}
			assert.ErrorIs(t, toolError{c.err}, c.err, "the cause stays reachable")
		})
	}
}
