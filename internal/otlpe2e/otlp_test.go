package otlpe2e

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is an OTLP/HTTP trace receiver: it decodes each export request
// (application/x-protobuf, the OTLP collector service's request type) and
// keeps its spans.
type receiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	requests int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.requests++
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) received() (spans []*tracepb.Span, requests int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...), rc.requests
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func attr(sp *tracepb.Span, key attribute.Key) string {
	for _, kv := range sp.Attributes {
		if kv.Key == string(key) {
			v := kv.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			case v.GetBoolValue():
				return "true"
			}
		}
	}
	return ""
}

func TestToolCallSpansArriveAtAnOTLPReceiverAsToolAttemptAndCommands(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lb := local.New(local.Options{Logger: quiet})
	t.Cleanup(func() { require.NoError(t, lb.Close()) })
	// cdp-inspect, enabled at a port nothing listens on, fails to connect:
	// the call fails over to local.
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port, cfg.Enabled, cfg.ProbeTimeoutMs = "127.0.0.1", closedPort(t), true, 2000
	sel := bb.NewSelector(bb.Options{Logger: quiet, Providers: []bb.Provider{
		cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()), local.NewProvider(lb)}})
	tl := tools.New(tools.Options{Selector: sel, Logger: quiet, ScreenshotDir: t.TempDir(),
		Recorder: recorder.New(recorder.Options{TracerProvider: tp})})
	t.Cleanup(tl.Shutdown)
	site := chromiumtest.FixtureServer(t, nil)
	inv := bb.Invocation{ConversationID: "conv-otlp", InterfaceID: "cli"}

	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: site.URL + "/"})
	require.NoError(t, err)
	require.Equal(t, bb.KindLocal, nav.Backend)
	_, err = tl.Close(ctx, inv, tools.ReleaseInput{})
	require.NoError(t, err)
	require.NoError(t, tp.ForceFlush(ctx))

	spans, requests := rc.received()
	require.Positive(t, requests)
	var tool *tracepb.Span
	for _, sp := range spans {
		if sp.Name == "tool navigate" {
			tool = sp
		}
	}
	require.NotNil(t, tool, "the navigate's span arrived")
	assert.Empty(t, tool.ParentSpanId, "a tool call's span is a root")
	assert.Equal(t, "conv-otlp", attr(tool, recorder.AttrConversation))
	assert.Equal(t, "local", attr(tool, recorder.AttrBackend))

	children := map[string][]string{}
	for _, sp := range spans {
		if hex.EncodeToString(sp.ParentSpanId) == hex.EncodeToString(tool.SpanId) {
			assert.Equal(t, tool.TraceId, sp.TraceId)
			children[sp.Name] = append(children[sp.Name], attr(sp, recorder.AttrBackend))
		}
	}
	assert.Equal(t, []string{"cdp-inspect"}, children["attempt cdp-inspect"])
	assert.Equal(t, []string{"local"}, children["attempt local"])
	assert.Equal(t, []string{"local"}, children["cdp Page.navigate"], "the command, on local, is the call's child")
	for _, sp := range spans {
		if sp.Name == "attempt cdp-inspect" {
			assert.Equal(t, "true", attr(sp, recorder.AttrFailover))
			assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, sp.Status.GetCode())
		}
	}
}
