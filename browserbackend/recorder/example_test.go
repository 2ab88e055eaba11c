package recorder_test

import (
	"context"
	"fmt"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/recorder"
)

// A host records a tool call by hand: the call, its session's commands (the
// typed text's params are never kept), the selection that served it, and
// its end. Package tools does this for every call when its
// Options.Recorder is set.
func Example() {
	rec := recorder.New(recorder.Options{})
	ctx, call := rec.Begin(context.Background(), "conversation-1", "type")
	s := call.Session(&fakeSession{kind: bb.KindLocal})
	_ = s.Call(ctx, "DOM.focus", map[string]int{"backendNodeId": 7}, nil)
	_ = s.Call(ctx, "Input.insertText", map[string]string{"text": "hunter2"}, nil)
	call.Served(bb.KindLocal, "", []bb.Attempt{
		{Kind: bb.KindExtension, Stage: bb.StageSend, Class: bb.ClassTransport, Code: bb.CodeNoClient},
		{Kind: bb.KindLocal, Stage: bb.StageSuccess},
	})
	call.End("", nil)

	for _, e := range rec.Entries("conversation-1") {
		switch e.Type {
		case recorder.TypeCDP:
			fmt.Printf("cdp %s params=%q redacted=%v\n", e.Command.Method, e.Command.Params, e.Command.Redacted)
		case recorder.TypeAttempt:
			fmt.Printf("attempt %s %s failover=%v\n", e.Attempt.Kind, e.Attempt.Stage, e.Failover)
		case recorder.TypeCall:
			fmt.Printf("call %s on %s: %s\n", e.Op, e.Backend, e.Outcome)
		}
	}
	// Output:
	// cdp DOM.focus params="{\"backendNodeId\":7}" redacted=false
	// cdp Input.insertText params="" redacted=true
	// attempt extension send failover=true
	// attempt local success failover=false
	// call type on local: ok
}
