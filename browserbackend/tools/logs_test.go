package tools_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/logtest"
)

// Typed text is never logged, by the tools, the selector or the backend, at
// any level (SEL-11).
func TestTypedTextNeverReachesTheLogs(t *testing.T) {
	s := startSite(t)
	var buf logtest.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := chromiumtest.Start(t)
	tl := toolsOver(t, cdpInspectProvider(t, b, cdpinspect.WithLogger(log)), tools.Options{Logger: log})
	inv := browserbackend.Invocation{ConversationID: "conv-log"}

	const secret = "hunter2-correct-horse"
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: s.url("/form")})
	require.NoError(t, err)
	_, err = tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Selector: "#q"}, Text: secret})
	require.NoError(t, err)
	_, err = tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Selector: "#q"}, Text: secret, Slowly: true, Clear: true})
	require.NoError(t, err)
	_, err = tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Selector: "#nope"}, Text: secret})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret, "nor in errors")

	logs := buf.String()
	require.Contains(t, logs, "browser tool done", "the tools did log")
	assert.NotContains(t, logs, secret)
}
