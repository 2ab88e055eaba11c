package recorder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/recorder"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSession answers every command with the JSON in results (by method),
// "{}" by default, or fails with errs[method].
type fakeSession struct {
	kind    bb.Kind
	results map[string]string
	errs    map[string]error
	sent    []string
}

func (f *fakeSession) Kind() bb.Kind { return f.kind }

func (f *fakeSession) Call(ctx context.Context, method string, params, result any) error {
	f.sent = append(f.sent, method)
	if err := f.errs[method]; err != nil {
		return err
	}
	res, ok := f.results[method]
	if !ok {
		res = "{}"
	}
	if result == nil {
		return nil
	}
	return jsonv2.Unmarshal([]byte(res), result)
}

func (f *fakeSession) Subscribe(string) (<-chan jsonv2.Value, func()) {
	ch := make(chan jsonv2.Value)
	return ch, func() {}
}

const secret = "hunter2-Secret!"

// export returns a conversation's JSON lines and HTML page.
func export(t *testing.T, r *recorder.Recorder, conv string) (string, string) {
	t.Helper()
	var jl, html bytes.Buffer
	require.NoError(t, r.WriteJSONL(&jl, conv))
	require.NoError(t, r.WriteHTML(&html, conv))
	return jl.String(), html.String()
}

func TestRingKeepsTheNewestEntriesWithinItsBounds(t *testing.T) {
	r := recorder.New(recorder.Options{MaxEntries: 3})
	for range 5 {
		_, c := r.Begin(t.Context(), "conv", "scroll")
		c.End("", nil)
	}
	es := r.Entries("conv")
	require.Len(t, es, 3)
	assert.Equal(t, []uint64{3, 4, 5}, []uint64{es[0].Call, es[1].Call, es[2].Call})
	assert.Equal(t, []uint64{3, 4, 5}, []uint64{es[0].Seq, es[1].Seq, es[2].Seq})
	st, ok := r.Stats("conv")
	require.True(t, ok)
	assert.Equal(t, recorder.Stats{Calls: 5, Entries: 3, Bytes: st.Bytes, Dropped: 2}, st)
	assert.Positive(t, st.Bytes)

	// The byte bound: each entry costs more than a third of it.
	one := st.Bytes / 3
	r = recorder.New(recorder.Options{MaxBytes: 2*one + one/2})
	for range 4 {
		_, c := r.Begin(t.Context(), "conv", "scroll")
		c.End("", nil)
	}
	st, _ = r.Stats("conv")
	assert.Equal(t, 2, st.Entries)
	assert.Equal(t, 2, st.Dropped)
	assert.LessOrEqual(t, st.Bytes, 2*one+one/2)
}

func TestRingDropsAScreenshotsBytesOverTheByteBound(t *testing.T) {
	r := recorder.New(recorder.Options{MaxBytes: 4096, MaxShotBytes: 1 << 20})
	_, c := r.Begin(t.Context(), "conv", "screenshot")
	c.Screenshot(recorder.Shot{Path: "/x.png", Size: 8192, Data: make([]byte, 8192)})
	c.End("", nil)
	es := r.Entries("conv")
	require.Len(t, es, 2)
	assert.Nil(t, es[0].Shot.Data)
	assert.Equal(t, "/x.png", es[0].Shot.Path)
}

func TestConversationsAreBoundedLeastRecentFirst(t *testing.T) {
	r := recorder.New(recorder.Options{MaxConversations: 2})
	for _, conv := range []string{"a", "b", "a", "c"} {
		_, c := r.Begin(t.Context(), conv, "scroll")
		c.End("", nil)
	}
	assert.Equal(t, []string{"a", "c"}, r.Conversations())
	assert.Nil(t, r.Entries("b"))
	assert.Equal(t, int64(1), r.Forgotten())
	r.Forget("a")
	assert.Equal(t, []string{"c"}, r.Conversations())
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *recorder.Recorder
	ctx, c := r.Begin(t.Context(), "conv", "click")
	assert.Nil(t, c)
	assert.Equal(t, t.Context(), ctx)
	s := &fakeSession{}
	assert.Same(t, cdp.Session(s), c.Session(s))
	c.Sensitive()
	c.Served(bb.KindLocal, "", nil)
	c.Guard(recorder.GuardDecision{})
	c.Event(recorder.PageEvent{})
	c.Screenshot(recorder.Shot{})
	c.End("", nil)
	assert.Nil(t, r.Conversations())
	assert.Nil(t, r.Entries("conv"))
}

func TestContextCarriesTheRecorderOfOneCall(t *testing.T) {
	_, ok := recorder.FromContext(t.Context())
	assert.False(t, ok)
	r := recorder.New(recorder.Options{})
	got, ok := recorder.FromContext(recorder.NewContext(t.Context(), r))
	assert.True(t, ok)
	assert.Same(t, r, got)
	got, ok = recorder.FromContext(recorder.NewContext(t.Context(), nil))
	assert.True(t, ok)
	assert.Nil(t, got)
}

func TestSessionRecordsCommandsWithRedactedParams(t *testing.T) {
	r := recorder.New(recorder.Options{MaxParamBytes: 64})
	ctx, c := r.Begin(t.Context(), "conv", "type")
	fs := &fakeSession{kind: bb.KindLocal,
		results: map[string]string{"Runtime.evaluate": `{"result":{"type":"string","value":"https://a.test/"}}`},
		errs: map[string]error{"DOM.focus": &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeCDPError,
			Message: "no node"}}}
	s := c.Session(fs)

	res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: "location.href"})
	require.NoError(t, err)
	assert.JSONEq(t, `"https://a.test/"`, string(res.Result.Value), "the result reaches the caller")
	_, err = cdp.Call(ctx, s, input.InsertText, input.InsertTextParams{Text: secret})
	require.NoError(t, err)
	_, err = cdp.Call(ctx, s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: "char", Text: secret})
	require.NoError(t, err)
	require.NoError(t, s.Call(ctx, "Network.getCookies", nil, nil))
	require.NoError(t, s.Call(ctx, "Storage.setCookies", map[string]any{"cookies": []any{map[string]string{"value": secret}}}, nil))
	_, err = cdp.Call(ctx, s, page.Navigate, page.NavigateParams{URL: "https://a.test/" + strings.Repeat("x", 100)})
	require.NoError(t, err)
	require.Error(t, s.Call(ctx, "DOM.focus", map[string]int{"backendNodeId": 7}, nil))
	c.End("", nil)

	es := r.Entries("conv")
	require.Len(t, es, 8)
	cmds := map[string]recorder.Entry{}
	for _, e := range es[:7] {
		require.Equal(t, recorder.TypeCDP, e.Type)
		assert.Equal(t, "local", e.Backend)
		cmds[e.Command.Method] = e
	}
	ev := cmds["Runtime.evaluate"]
	assert.Equal(t, `{"expression":"location.href"}`, ev.Command.Params)
	assert.Equal(t, len(`{"result":{"type":"string","value":"https://a.test/"}}`), ev.Command.ResultBytes)
	assert.Equal(t, "ok", ev.Outcome)
	for _, m := range []string{"Input.insertText", "Input.dispatchKeyEvent", "Storage.setCookies", "Network.getCookies"} {
		assert.True(t, cmds[m].Command.Redacted, m)
		assert.Empty(t, cmds[m].Command.Params, m)
	}
	assert.Positive(t, cmds["Input.insertText"].Command.ParamsBytes, "the size is kept")
	nav := cmds["Page.navigate"].Command
	assert.Len(t, nav.Params, 64+len("…"), "capped")
	assert.True(t, strings.HasSuffix(nav.Params, "…"))
	focus := cmds["DOM.focus"]
	assert.Equal(t, "error", focus.Outcome)
	assert.Equal(t, bb.CodeCDPError, focus.Code)
	assert.Contains(t, focus.Error, "no node")

	jl, html := export(t, r, "conv")
	assert.NotContains(t, jl, secret)
	assert.NotContains(t, html, secret)
}

func TestSensitiveCallRecordsNoParams(t *testing.T) {
	r := recorder.New(recorder.Options{})
	ctx, c := r.Begin(t.Context(), "conv", "login")
	c.Sensitive()
	s := c.Session(&fakeSession{errs: map[string]error{"Runtime.callFunctionOn": errors.New("failed with " + secret)}})
	require.Error(t, s.Call(ctx, "Runtime.callFunctionOn", map[string]any{"arguments": []any{map[string]string{"value": secret}}}, nil))
	c.End("backend", errors.New("tools: login: the field could not be filled"))
	es := r.Entries("conv")
	require.Len(t, es, 2)
	assert.True(t, es[0].Command.Redacted)
	assert.Empty(t, es[0].Error, "the error text of a redacted command may quote its params")
	jl, html := export(t, r, "conv")
	assert.NotContains(t, jl, secret)
	assert.NotContains(t, html, secret)
}

func TestSecretMethod(t *testing.T) {
	for method, want := range map[string]bool{
		"Input.insertText": true, "Input.dispatchKeyEvent": true, "Input.imeSetComposition": true,
		"Network.getCookies": true, "Network.setCookie": true, "Network.deleteCookies": true,
		"Storage.getCookies": true, "Storage.clearDataForOrigin": true, "Fetch.continueWithAuth": true,
		"Network.setExtraHTTPHeaders": true, "Fetch.fulfillRequest": true, "Page.handleJavaScriptDialog": true,
		"Input.dispatchMouseEvent": false, "Page.navigate": false, "Runtime.evaluate": false,
		"DOM.focus": false, "Fetch.continueRequest": false,
	} {
		assert.Equal(t, want, recorder.SecretMethod(method), method)
	}
}

func TestRedactCapsOnARuneBoundary(t *testing.T) {
	assert.Equal(t, "", recorder.Redact(nil, 10))
	assert.Equal(t, "", recorder.Redact([]byte(`{"a":1}`), -1))
	assert.Equal(t, `{"a":1}`, recorder.Redact([]byte(`{"a":1}`), 10))
	assert.Equal(t, `{"a":"é…`, recorder.Redact([]byte(`{"a":"éé"}`), 8), "é is two bytes: the cut goes before the second")
}

// failoverCall records a call that failed over from cdp-inspect to local
// and took a screenshot.
func failoverCall(t *testing.T, r *recorder.Recorder, shotPath string) {
	ctx, c := r.Begin(t.Context(), "conv", "screenshot")
	s := c.Session(&fakeSession{kind: bb.KindLocal})
	require.NoError(t, s.Call(ctx, "Page.captureScreenshot", map[string]string{"format": "png"}, nil))
	c.Served(bb.KindLocal, "T1", []bb.Attempt{
		{Kind: bb.KindExtension, Stage: bb.StageCandidateSelection, Code: bb.CodeNoClient, Reason: "auto"},
		{Kind: bb.KindCDPInspect, Stage: bb.StageSend, Class: bb.ClassTransport, Code: bb.CodeTransportError,
			Message: "socket closed", Remembered: true, Elapsed: 3 * time.Millisecond, Err: errors.New("x")},
		{Kind: bb.KindLocal, Stage: bb.StageSuccess, Reason: "auto", Elapsed: 40 * time.Millisecond},
	})
	c.Screenshot(recorder.Shot{Path: shotPath, SHA256: "abc", MediaType: "image/png", Width: 1, Height: 1, Size: 4})
	c.End("", nil)
}

func TestFailoverMarksAFailureOrTheRememberedBackendGoneNeverTheLastOrASkip(t *testing.T) {
	local := bb.Attempt{Kind: bb.KindLocal, Stage: bb.StageSuccess}
	for name, tc := range map[string]struct {
		first bb.Attempt
		want  bool
	}{
		"failed at send":               {bb.Attempt{Kind: bb.KindCDPInspect, Stage: bb.StageSend, Class: bb.ClassTransport}, true},
		"failed at construction":       {bb.Attempt{Kind: bb.KindCDPInspect, Stage: bb.StageConstruction, Class: bb.ClassTransport}, true},
		"remembered and gone":          {bb.Attempt{Kind: bb.KindExtension, Stage: bb.StageCandidateSelection, Code: bb.CodeNoClient, Remembered: true}, true},
		"remembered but yielded":       {bb.Attempt{Kind: bb.KindHostBridge, Stage: bb.StageCandidateSelection, Remembered: true, Yielded: true}, false},
		"skipped, not remembered":      {bb.Attempt{Kind: bb.KindExtension, Stage: bb.StageCandidateSelection, Code: bb.CodeNoClient}, false},
		"served (a later one was too)": {bb.Attempt{Kind: bb.KindExtension, Stage: bb.StageSuccess}, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := recorder.New(recorder.Options{})
			_, c := r.Begin(t.Context(), "conv", "click")
			c.Served(bb.KindLocal, "T1", []bb.Attempt{tc.first, local})
			c.End("", nil)
			var marks []bool
			for _, e := range r.Entries("conv") {
				if e.Type == recorder.TypeAttempt {
					marks = append(marks, e.Failover)
				}
			}
			assert.Equal(t, []bool{tc.want, false}, marks)
		})
	}
}

func TestServedRecordsTheAttemptsAndMarksFailover(t *testing.T) {
	shot := filepath.Join(t.TempDir(), "s.png")
	require.NoError(t, os.WriteFile(shot, []byte("\x89PNG"), 0o600))
	r := recorder.New(recorder.Options{})
	failoverCall(t, r, shot)

	var attempts []recorder.Entry
	var shots []recorder.Entry
	for _, e := range r.Entries("conv") {
		switch e.Type {
		case recorder.TypeAttempt:
			attempts = append(attempts, e)
		case recorder.TypeScreenshot:
			shots = append(shots, e)
		}
	}
	require.Len(t, attempts, 3)
	assert.Equal(t, []bool{false, true, false}, []bool{attempts[0].Failover, attempts[1].Failover, attempts[2].Failover})
	assert.Nil(t, attempts[1].Attempt.Err)
	assert.True(t, attempts[1].Attempt.Remembered)
	require.Len(t, shots, 1)
	assert.Equal(t, []byte("\x89PNG"), shots[0].Shot.Data, "read from the file")

	jl, html := export(t, r, "conv")
	lines := strings.Split(strings.TrimSpace(jl), "\n")
	assert.Len(t, lines, 6)
	var first recorder.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.Equal(t, "conv", first.Conversation)
	assert.Contains(t, html, `data-failover="cdp-inspect"`)
	assert.Contains(t, html, `src="data:image/png;base64,iVBORw=="`)
	assert.Contains(t, html, `class="call failover"`)
	assert.NotContains(t, html, "<script", "self-contained, no script")
	assert.NotContains(t, html, "http://", "no network resource")
}

func TestSpansNestAttemptsAndCommandsUnderTheToolCall(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	r := recorder.New(recorder.Options{TracerProvider: tp})

	ctx, c := r.Begin(t.Context(), "conv", "type")
	s := c.Session(&fakeSession{kind: bb.KindLocal})
	_, err := cdp.Call(ctx, s, input.InsertText, input.InsertTextParams{Text: secret})
	require.NoError(t, err)
	c.Served(bb.KindLocal, "T1", []bb.Attempt{
		{Kind: bb.KindCDPInspect, Stage: bb.StageConstruction, Class: bb.ClassTransport, Code: bb.CodeUnreachable},
		{Kind: bb.KindLocal, Stage: bb.StageSuccess},
	})
	c.Guard(recorder.GuardDecision{Allowed: true})
	c.End("", nil)

	spans := sr.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byName[sp.Name()] = sp
	}
	require.Len(t, spans, 4, "tool, two attempts, one command")
	tool := byName["tool type"]
	require.NotNil(t, tool)
	for _, name := range []string{"attempt cdp-inspect", "attempt local", "cdp Input.insertText"} {
		sp := byName[name]
		require.NotNil(t, sp, name)
		assert.Equal(t, tool.SpanContext().SpanID(), sp.Parent().SpanID(), name)
		assert.Equal(t, tool.SpanContext().TraceID(), sp.SpanContext().TraceID(), name)
	}
	assert.Contains(t, byName["attempt cdp-inspect"].Attributes(), recorder.AttrFailover.Bool(true))
	assert.Contains(t, tool.Attributes(), recorder.AttrBackend.String("local"))
	assert.Contains(t, byName["cdp Input.insertText"].Attributes(), recorder.AttrMethod.String("Input.insertText"))
	require.Len(t, tool.Events(), 1)
	assert.Equal(t, "guard", tool.Events()[0].Name)

	for _, sp := range spans {
		for _, kv := range sp.Attributes() {
			assert.NotContains(t, kv.Value.Emit(), secret, "%s %s", sp.Name(), kv.Key)
		}
		for _, ev := range sp.Events() {
			for _, kv := range ev.Attributes {
				assert.NotContains(t, kv.Value.Emit(), secret)
			}
		}
	}
}

func TestNoTracerProviderMakesNoSpans(t *testing.T) {
	r := recorder.New(recorder.Options{})
	ctx, c := r.Begin(t.Context(), "conv", "click")
	assert.Equal(t, t.Context(), ctx, "no span in ctx")
	c.End("", nil)
	_ = attribute.Key("")
}

func TestWriteFilesWritesJSONLinesAndHTMLUnderASafeName(t *testing.T) {
	r := recorder.New(recorder.Options{})
	for _, conv := range []string{"../up/and away", strings.Repeat("é", 150)} {
		_, c := r.Begin(t.Context(), conv, "scroll")
		c.End("", nil)
		dir := filepath.Join(t.TempDir(), "traces")
		require.NoError(t, r.WriteFiles(dir, conv))
		names, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, names, 2)
		for _, n := range names {
			assert.LessOrEqual(t, len(n.Name()), 255)
			assert.False(t, strings.ContainsAny(n.Name(), "/"))
			info, err := n.Info()
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		}
		raw, err := os.ReadFile(filepath.Join(dir, recorder.FileStem(conv)+".jsonl"))
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"type":"call"`)
	}
	require.NoError(t, r.WriteFiles(t.TempDir(), "never-recorded"))
}

// v1Session decodes results with encoding/json, as a session of a host's
// own may.
type v1Session struct{ fakeSession }

func (v *v1Session) Call(ctx context.Context, method string, params, result any) error {
	return json.Unmarshal([]byte(`{"result":{"type":"number","value":3}}`), result)
}

func TestSessionPassesResultsThroughAnEncodingJSONSession(t *testing.T) {
	r := recorder.New(recorder.Options{})
	ctx, c := r.Begin(t.Context(), "conv", "extract")
	res, err := cdp.Call(ctx, c.Session(&v1Session{}), runtime.Evaluate, runtime.EvaluateParams{Expression: "3"})
	require.NoError(t, err)
	assert.JSONEq(t, "3", string(res.Result.Value))
	c.End("", nil)
	assert.Equal(t, len(`{"result":{"type":"number","value":3}}`), r.Entries("conv")[0].Command.ResultBytes)
}

func TestRingBytesReturnToZeroWhenEverythingIsDropped(t *testing.T) {
	r := recorder.New(recorder.Options{MaxEntries: 2})
	var one int
	for i := range 10 {
		_, c := r.Begin(t.Context(), "a-long-conversation-id", "scroll")
		c.End("", nil)
		st, _ := r.Stats("a-long-conversation-id")
		if i == 0 {
			one = st.Bytes
		}
		assert.Equal(t, min(i+1, 2)*one, st.Bytes, "the bytes of the entries kept, no drift")
	}
}
