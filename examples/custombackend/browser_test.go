package custombackend_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/examples/custombackend"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hostRules = "--host-resolver-rules=MAP allowed.test 127.0.0.1, MAP blocked.test 127.0.0.1"

func step(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A backend written outside the library gets the conversations' own tabs,
// close and detach, and the popup hold of a guard by declaring CapTabs and
// CapHoldTargets and implementing ConversationReleaser: the tools know
// nothing of it.
func TestCustomBrowserBackendGetsTabsReleaseAndThePopupHold(t *testing.T) {
	var blockedHits atomic.Int64
	blocked := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blockedHits.Add(1)
		fmt.Fprint(w, "<title>Blocked</title>")
	}))
	blockedURL := "http://blocked.test:" + blocked.URL[strings.LastIndex(blocked.URL, ":")+1:]
	allowed := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<title>Allowed %s</title><button id="pop" onclick="window.open('%s/popup')">popup</button>`,
			r.URL.Query().Get("n"), blockedURL)
	}))
	allowedURL := "http://allowed.test:" + allowed.URL[strings.LastIndex(allowed.URL, ":")+1:]

	b := chromiumtest.Start(t, chromiumtest.WithArgs(hostRules))
	prov := custombackend.NewBrowserProvider("ws://127.0.0.1:" + strconv.Itoa(b.Port) + b.WSPath)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: log})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: log})
	invA := browserbackend.Invocation{ConversationID: "a"}
	invB := browserbackend.Invocation{ConversationID: "b"}

	a1, err := tl.Navigate(step(t), invA, tools.NavigateInput{URL: allowedURL + "/?n=1"})
	require.NoError(t, err)
	assert.Equal(t, custombackend.BrowserKind, a1.Backend)
	require.NotEmpty(t, a1.TabID)
	b1, err := tl.Navigate(step(t), invB, tools.NavigateInput{URL: allowedURL + "/?n=2"})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, b1.TabID, "each conversation works in its own tab")
	exA, err := tl.Read().Extract(step(t), invA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, a1.TabID, exA.TabID)
	assert.Equal(t, allowedURL+"/?n=1", exA.URL, "conversation A's tab is untouched by B")

	a2, err := tl.Navigate(step(t), invA, tools.NavigateInput{URL: allowedURL + "/?n=3", NewTab: true})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, a2.TabID, "new_tab reaches the custom backend")

	// The popup hold: under a guard, the page's window to an off-list host
	// is held before its first request, refused and closed.
	g := guard.MustNew(guard.Policy{
		AllowedDomains: []string{"allowed.test"},
		DevLoopback:    []string{strings.TrimPrefix(allowedURL, "http://")},
		Resolver: guard.ResolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}),
		Logger: log,
	})
	_, err = tl.Act().Click(guard.NewContext(step(t), g), invA, tools.ElementInput{Target: tools.Target{Selector: "#pop"}})
	require.ErrorIs(t, err, tools.ErrForbidden)
	assert.Zero(t, blockedHits.Load(), "the blocked server received no request from the popup")

	cl, err := tl.Close(step(t), invA, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: custombackend.BrowserKind, Tab: browserbackend.Tab{ID: a2.TabID, Owned: true}, Closed: true}}, cl.Tabs)
	de, err := tl.Detach(step(t), invB, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: custombackend.BrowserKind, Tab: browserbackend.Tab{ID: b1.TabID, Owned: true}}}, de.Tabs)
}
