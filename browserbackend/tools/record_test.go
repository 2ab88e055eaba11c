package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// failingOverTools returns Tools over a fake extension whose build fails
// (the client is gone) and a fake local that answers everything.
func failingOverTools(o tools.Options) *tools.Tools {
	gone := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeNoClient, Message: "extension gone"}
	ext, loc := hostproxytest.ReferenceDescriptor(browserbackend.KindExtension), hostproxytest.ReferenceDescriptor(browserbackend.KindLocal)
	o.Logger = browserbackendtest.DiscardLogger()
	o.Selector = browserbackend.NewSelector(browserbackend.Options{Logger: o.Logger, Providers: []browserbackend.Provider{
		&browserbackendtest.Provider{K: browserbackend.KindExtension, Desc: &ext, BuildErr: gone},
		&browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: &loc},
	}})
	return tools.New(o)
}

func attemptsOf(es []recorder.Entry, call uint64) (n int, failover bool) {
	for _, e := range es {
		if e.Call == call && e.Type == recorder.TypeAttempt {
			n++
			failover = failover || e.Failover
		}
	}
	return n, failover
}

func TestRecorderIsOffByDefaultAndOnPerToolsOrPerCall(t *testing.T) {
	ctx := context.Background()
	inv := browserbackend.Invocation{ConversationID: "c1"}
	rec := recorder.New(recorder.Options{})

	plain := failingOverTools(tools.Options{})
	_, err := plain.Act().Scroll(ctx, inv, tools.ScrollInput{})
	require.NoError(t, err)
	assert.Nil(t, plain.Recorder())
	_, err = plain.Act().Scroll(recorder.NewContext(ctx, rec), inv, tools.ScrollInput{})
	require.NoError(t, err)
	st, ok := rec.Stats("c1")
	require.True(t, ok, "recorded for the one call")
	assert.Equal(t, uint64(1), st.Calls)

	on := failingOverTools(tools.Options{Recorder: rec})
	_, err = on.Act().Scroll(ctx, inv, tools.ScrollInput{})
	require.NoError(t, err)
	_, err = on.Act().Scroll(recorder.NewContext(ctx, nil), inv, tools.ScrollInput{})
	require.NoError(t, err)
	st, _ = rec.Stats("c1")
	assert.Equal(t, uint64(2), st.Calls, "the call turned off was not recorded")
	n, failover := attemptsOf(rec.Entries("c1"), 2)
	assert.Equal(t, 2, n)
	assert.True(t, failover)
}

func TestRecorderRecordsAKeptClientsSelectionOnce(t *testing.T) {
	rec := recorder.New(recorder.Options{})
	tl := failingOverTools(tools.Options{Recorder: rec, KeepClients: true})
	t.Cleanup(tl.Shutdown)
	inv := browserbackend.Invocation{ConversationID: "kept"}
	for range 2 {
		res, err := tl.Act().Scroll(context.Background(), inv, tools.ScrollInput{})
		require.NoError(t, err)
		require.Len(t, res.Attempts, 2, "the result still lists the selection")
	}
	es := rec.Entries("kept")
	n, failover := attemptsOf(es, 1)
	assert.Equal(t, 2, n)
	assert.True(t, failover)
	n, _ = attemptsOf(es, 2)
	assert.Zero(t, n, "the second call selected nothing")
	var calls []string
	for _, e := range es {
		if e.Type == recorder.TypeCall {
			calls = append(calls, e.Backend+" "+e.Outcome)
		}
	}
	assert.Equal(t, []string{"local ok", "local ok"}, calls)
}

func TestRecorderRecordsAGuardRefusal(t *testing.T) {
	rec := recorder.New(recorder.Options{})
	tl := failingOverTools(tools.Options{Recorder: rec})
	inv := browserbackend.Invocation{ConversationID: "guarded"}
	ctx := guard.NewContext(context.Background(), guard.MustNew(guard.Policy{AllowedDomains: []string{"*"}}))
	_, err := tl.Act().Type(ctx, inv, tools.TypeInput{Target: tools.Target{Selector: "#q"}, Text: "AKIAIOSFODNN7EXAMPLE"})
	require.ErrorIs(t, err, tools.ErrValidationFailed)
	var refused []recorder.Entry
	for _, e := range rec.Entries("guarded") {
		if e.Type == recorder.TypeGuard {
			refused = append(refused, e)
		}
	}
	require.Len(t, refused, 1)
	assert.False(t, refused[0].Guard.Allowed)
	assert.Equal(t, "validation_failed", refused[0].Guard.Code)
	assert.Equal(t, "text", refused[0].Guard.Param)
	var jl strings.Builder
	require.NoError(t, rec.WriteJSONL(&jl, "guarded"))
	assert.NotContains(t, jl.String(), "AKIAIOSFODNN7EXAMPLE")
}
