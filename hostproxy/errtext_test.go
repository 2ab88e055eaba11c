package hostproxy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// TestParseErrorAnswer_TheAnswersRealClientsSend is the table of WIRE-2: a
// twice-encoded CDP error yields its innermost code, plain text a protocol
// code, a code-less object stays malformed.
func TestParseErrorAnswer_TheAnswersRealClientsSend(t *testing.T) {
	cases := []struct {
		name, content string
		class         browserbackend.Class
		code          string
		cdpCode       int
		message       string
	}{
		{"twice-encoded CDP error", `{"code":-32000,"message":"{\"code\":-32601,\"message\":\"'No.suchMethod' wasn't found\"}"}`,
			browserbackend.ClassProtocol, browserbackend.CodeCDPError, -32601, "'No.suchMethod' wasn't found"},
		{"three times encoded", `{"code":-32000,"message":"{\"code\":-32000,\"message\":\"{\\\"code\\\":-32602,\\\"message\\\":\\\"bad\\\"}\"}"}`,
			browserbackend.ClassProtocol, browserbackend.CodeCDPError, -32602, "bad"},
		{"plain CDP error", `{"code":-32000,"message":"Cannot navigate to invalid URL"}`,
			browserbackend.ClassProtocol, browserbackend.CodeCDPError, -32000, "Cannot navigate to invalid URL"},
		{"message that is JSON but no error", `{"code":-32000,"message":"{\"a\":1}"}`,
			browserbackend.ClassProtocol, browserbackend.CodeCDPError, -32000, `{"a":1}`},
		{"no tab", `No tab with given id 999999.`, browserbackend.ClassProtocol, browserbackend.CodeTargetNotFound, 0, "No tab with given id 999999."},
		{"no target", `No target with given id ABCDEF.`, browserbackend.ClassProtocol, browserbackend.CodeTargetNotFound, 0, "No target with given id ABCDEF."},
		{"chrome url", `Cannot access a chrome:// URL`, browserbackend.ClassProtocol, browserbackend.CodeForbiddenTarget, 0, "Cannot access a chrome:// URL"},
		{"other extension", `Cannot access contents of url "chrome-extension://x/". Extension manifest must request permission to access this host.`,
			browserbackend.ClassProtocol, browserbackend.CodeForbiddenTarget, 0, ""},
		{"other text", `Debugger is not attached to the tab with id: 7.`, browserbackend.ClassProtocol, browserbackend.CodeClientError, 0, ""},
		{"text as a JSON string", `"No tab with given id 7."`, browserbackend.ClassProtocol, browserbackend.CodeTargetNotFound, 0, "No tab with given id 7."},
		{"text starting with a brace", `{not json`, browserbackend.ClassProtocol, browserbackend.CodeClientError, 0, "{not json"},
		{"empty", ``, browserbackend.ClassProtocol, browserbackend.CodeClientError, 0, ""},
		{"transport code", `{"code":"unreachable","message":"no chrome"}`, browserbackend.ClassTransport, "unreachable", 0, "no chrome"},
		{"payload too large", `{"code":"payload_too_large","message":"m"}`, browserbackend.ClassProtocol, browserbackend.CodePayloadTooLarge, 0, "m"},
		{"no code", `{"message":"x"}`, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, 0, ""},
		{"null code", `{"code":null,"message":"x"}`, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ClassifyResult("Page.navigate", browserbackend.KindExtension, tc.content, true)
			var e *browserbackend.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.class, e.Class)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, tc.cdpCode, e.CDPCode)
			if tc.message != "" {
				assert.Equal(t, tc.message, e.Message)
			}
			assert.Equal(t, tc.class == browserbackend.ClassTransport, errors.Is(err, browserbackend.ErrTransport))
		})
	}
	_, err := ClassifyResult("No.suchMethod", browserbackend.KindExtension,
		`{"code":-32000,"message":"{\"code\":-32601,\"message\":\"'No.suchMethod' wasn't found\"}"}`, true)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)
}
