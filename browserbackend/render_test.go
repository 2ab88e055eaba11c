package browserbackend_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// One rendering of every error: each layer adds what it alone knows, once.
func TestErrorTextSaysEachThingOnce(t *testing.T) {
	navTimeout := &bb.Error{Class: bb.ClassTimeout, Code: bb.CodeTimeout, Backend: bb.KindLocal, Method: "Page.navigate",
		Dispatched: true, Message: "deadline passed before an answer (outcome unknown)", Err: context.DeadlineExceeded}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a backend timeout re-wrapped by the client", &bb.Error{Class: bb.ClassTimeout, Code: bb.CodeTimeout, Backend: bb.KindLocal,
			Method: "Page.navigate", Message: navTimeout.Message, Err: navTimeout},
			"browserbackend: local Page.navigate timeout: deadline passed before an answer (outcome unknown): context deadline exceeded"},
		{"a CDP error whose cause repeats the message", &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeCDPError, CDPCode: -32601,
			Backend: bb.KindLocal, Method: "Nope.nope", Message: "'Nope.nope' wasn't found",
			Err: errors.New("playwright: Protocol error (Nope.nope): 'Nope.nope' wasn't found")},
			"browserbackend: local Nope.nope protocol/cdp_error (-32601): 'Nope.nope' wasn't found"},
		{"a caller's cancellation", bb.ContextError(cancelled, "Runtime.evaluate", false),
			"browserbackend: Runtime.evaluate aborted/cancelled: cancelled by the caller: context canceled"},
		{"a transport failure with its own cause", bb.TransportError(bb.CodeUnreachable, "nothing listens on 127.0.0.1:9", errors.New("dial tcp 127.0.0.1:9: connection refused")),
			"browserbackend: transport/unreachable: nothing listens on 127.0.0.1:9: dial tcp 127.0.0.1:9: connection refused"},
		{"an inner error that adds a backend", &bb.Error{Class: bb.ClassTransport, Code: bb.CodeTransportError, Method: "DOM.enable",
			Message: "send failed", Err: &bb.Error{Class: bb.ClassTransport, Code: bb.CodeSessionNotFound, Backend: bb.KindCDPInspect, Method: "DOM.enable", Message: "tab closed"}},
			"browserbackend: DOM.enable transport/transport_error: send failed: cdp-inspect transport/cdp_session_not_found: tab closed"},
		{"a timeout with diagnostics", &bb.Error{Class: bb.ClassTimeout, Code: bb.CodeTimeout, Backend: bb.KindCDPInspect, Method: "Runtime.evaluate",
			Message:     "deadline passed before an answer (outcome unknown)",
			Diagnostics: &bb.Diagnostics{InFlight: 21, OldestInFlight: 10 * time.Second, SinceLastAnswer: 9500 * time.Millisecond, Uptime: time.Minute}},
			"browserbackend: cdp-inspect Runtime.evaluate timeout: deadline passed before an answer (outcome unknown) (21 in flight, oldest 10s, last answer 9.5s ago, up 1m0s)"},
		{"a timeout before the command was sent", func() error {
			e := bb.ContextError(expired, "Page.navigate", false)
			e.Backend, e.Diagnostics = bb.KindLocal, &bb.Diagnostics{SinceLastAnswer: 5 * time.Second}
			return e
		}(), "browserbackend: local Page.navigate timeout: deadline passed before the command was sent (0 in flight, last answer 5s ago, not up): context deadline exceeded"},
		{"a code that names its class", &bb.Error{Class: bb.ClassClosed, Code: bb.CodeClosed, Message: "client is closed"},
			"browserbackend: closed: client is closed"},
		{"a -32001 reply", bb.ProtocolError(-32001, "Session with given id not found"),
			"browserbackend: transport/cdp_session_not_found (-32001): Session with given id not found"},
	} {
		assert.Equal(t, tc.want, tc.err.Error(), tc.name)
	}
}
