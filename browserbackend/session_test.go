package browserbackend_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
)

func TestAsSessionRunsTypedCommandsAndSessionEventsOnABackend(t *testing.T) {
	be := bbt.NewBackend(bb.KindCDPInspect, bbt.JSON(map[string]any{
		"result": map[string]any{"type": "number", "value": 2},
	}))
	defer be.Close()
	s := bb.AsSession(be, "S1")

	res, err := cdp.Call(context.Background(), s, runtime.Evaluate, runtime.EvaluateParams{Expression: "1+1"})
	require.NoError(t, err)
	assert.JSONEq(t, "2", string(res.Result.Value))
	calls := be.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "S1", calls[0].SessionID)
	assert.JSONEq(t, `{"expression":"1+1"}`, string(calls[0].Params))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := cdp.Events(ctx, s, page.LoadEventFired)
	// Another session's event is filtered out; the bound session's arrives.
	be.Emit(bb.Event{Method: "Page.loadEventFired", SessionID: "S2", Params: json.RawMessage(`{"timestamp":1}`)})
	be.Emit(bb.Event{Method: "Page.loadEventFired", SessionID: "S1", Params: json.RawMessage(`{"timestamp":2}`)})
	for ev, err := range loads {
		require.NoError(t, err)
		require.NotNil(t, ev.Timestamp)
		assert.Equal(t, 2.0, ev.Timestamp.Float64(), "the S2 event is filtered out; S1 arrives first")
		break
	}
}

func TestAsSessionWithoutEventSourceGivesAnEmptySubscription(t *testing.T) {
	s := bb.AsSession(bb.SendFunc(func(context.Context, bb.Command) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}), "")
	ch, cancel := s.Subscribe("Page.loadEventFired")
	select {
	case <-ch:
		t.Fatal("no event source, no events")
	default:
	}
	cancel()
	_, open := <-ch
	assert.False(t, open, "cancel closes the channel")
}
