package tools_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// heldSite serves /held, a page whose image is answered only once release
// is closed, and /plain, a page that loads at once.
type heldSite struct {
	url       string
	requested chan struct{} // closed when the held image is first requested
	release   chan struct{}
}

func startHeldSite(t *testing.T) *heldSite {
	t.Helper()
	h := &heldSite{requested: make(chan struct{}), release: make(chan struct{})}
	var once atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		page(w, "held page", `<p>waiting for an image</p><img src="/img" alt="held">`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		page(w, "plain page", `<p>nothing to wait for</p>`)
	})
	mux.HandleFunc("/img", func(w http.ResponseWriter, r *http.Request) {
		if once.CompareAndSwap(false, true) {
			close(h.requested)
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/gif")
		fmt.Fprint(w, "GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	})
	srv := chromiumtest.LoopbackServer(t, mux)
	h.url = srv.URL
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

// TestTwoConversationsOnOneClient_ANavigateDoesNotEndOnBsLoad (WIRE-4): two
// conversations share one extension client, each in its own tab. A's
// navigate to a page whose image the server holds back must not end when
// B's page fires load, on a client that names the tab of its events (the
// reference extension) and on one that names none (the Vellum-shaped
// client), and on the desktop bridge with a tab per conversation; each
// conversation's commands run in its own tab.
func TestTwoConversationsOnOneClient_ANavigateDoesNotEndOnBsLoad(t *testing.T) {
	for _, client := range []string{"reference extension", "vellum-shaped client", "host-bridge"} {
		t.Run(client, func(t *testing.T) {
			site := startHeldSite(t)
			h := startRuntime(t)
			switch client {
			case "reference extension":
				startExtension(t, h)
			case "vellum-shaped client":
				startVellumClient(t, h)
			default:
				runBridgeOn(t, h, chromiumtest.Start(t), true)
			}
			tl := h.tools(t)
			invA, invB := h.invocation("conv-A"), h.invocation("conv-B")
			ctx := stepCtx(t)

			// B has its tab first, so A's is not simply the newest one.
			_, err := tl.Navigate(ctx, invB, tools.NavigateInput{URL: site.url + "/plain"})
			require.NoError(t, err)

			var released atomic.Bool
			type outcome struct {
				res           tools.NavigateResult
				err           error
				beforeRelease bool
			}
			aDone := make(chan outcome, 1)
			go func() {
				res, err := tl.Navigate(ctx, invA, tools.NavigateInput{URL: site.url + "/held"})
				aDone <- outcome{res, err, !released.Load()}
			}()
			select {
			case <-site.requested: // A's page is loading, its load event pending
			case o := <-aDone:
				t.Fatalf("A's navigate ended before its image was even requested: %+v %v", o.res, o.err)
			}

			// B loads a page (its load event reaches the client's subscribers)
			// and reads it, while A's image is still held back.
			nb, err := tl.Navigate(ctx, invB, tools.NavigateInput{URL: site.url + "/plain?again"})
			require.NoError(t, err)
			assert.Equal(t, "plain page", nb.Title, "B's navigate ran in B's tab")
			ex, err := tl.Read().Extract(ctx, invB, tools.ExtractInput{})
			require.NoError(t, err)
			assert.Contains(t, ex.Text, "nothing to wait for")

			released.Store(true)
			close(site.release)
			a := <-aDone
			require.NoError(t, a.err)
			assert.False(t, a.beforeRelease, "A's navigate ended on another tab's load, before its own page loaded")
			assert.Equal(t, "held page", a.res.Title)
			exA, err := tl.Read().Extract(ctx, invA, tools.ExtractInput{})
			require.NoError(t, err)
			if client != "host-bridge" { // the bridge keeps the tab and reports none
				assert.NotEqual(t, exA.TabID, ex.TabID, "each conversation has its own tab")
			}
			assert.Contains(t, exA.Text, "waiting for an image", "A's later call reads A's tab")
		})
	}
}

// logSite serves /log?who=X, a page titled X that logs "log-X".
func startLogSite(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/log", func(w http.ResponseWriter, r *http.Request) {
		who := r.URL.Query().Get("who")
		page(w, who, fmt.Sprintf(`<p>%s</p><script>console.log("log-%s")</script>`, who, who))
	})
	return chromiumtest.LoopbackServer(t, mux).URL
}

// TestTwoConversationsOnOneClient_EachSeesOnlyItsOwnTabsEvents (WIRE-4): two
// conversations on one extension client, each with its own tab and its own
// per-call client subscribed to every event, navigate their tabs in turn.
// Each sees its own tab's navigations, and no event that names the other
// tab's frame or page reaches it — with a client that names the tab of its
// events (the reference extension) and one that names none (the
// Vellum-shaped client), and over the desktop bridge with a tab per
// conversation (where a conversation's commands name no tab).
func TestTwoConversationsOnOneClient_EachSeesOnlyItsOwnTabsEvents(t *testing.T) {
	for _, client := range []string{"reference extension", "vellum-shaped client", "host-bridge"} {
		t.Run(client, func(t *testing.T) {
			site := startLogSite(t)
			h := startRuntime(t)
			bridged := client == "host-bridge"
			switch client {
			case "reference extension":
				startExtension(t, h)
			case "vellum-shaped client":
				startVellumClient(t, h)
			default:
				runBridgeOn(t, h, chromiumtest.Start(t), true)
			}
			tl := h.tools(t)
			ctx := stepCtx(t)
			type conv struct {
				name   string
				inv    browserbackend.Invocation
				c      *browserbackend.Client
				tab    string
				events <-chan browserbackend.Event
			}
			var convs []*conv
			for _, name := range []string{"A", "B"} {
				cv := &conv{name: name, inv: h.invocation("conv-" + name)}
				// Navigate opens and pins the conversation's own tab.
				nav, err := tl.Navigate(ctx, cv.inv, tools.NavigateInput{URL: "about:blank"})
				require.NoError(t, err)
				if !bridged { // on the bridge the conversation's page is implied
					require.NotEmpty(t, nav.TabID)
					cv.tab = nav.TabID
				}
				cv.c = h.rt.Selector.Client(cv.inv)
				t.Cleanup(func() { cv.c.Close() })
				var stop func()
				cv.events, stop = cv.c.Events("")
				t.Cleanup(stop)
				for _, m := range []string{"Page.enable", "Runtime.enable"} {
					_, err := cv.c.Send(ctx, browserbackend.Command{Method: m, SessionID: cv.tab})
					require.NoError(t, err)
				}
				convs = append(convs, cv)
			}
			if !bridged {
				require.NotEqual(t, convs[0].tab, convs[1].tab)
			}

			frames := map[string]string{} // main frame id → conversation
			navigate := func(cv *conv, who string) {
				raw, err := cv.c.Send(ctx, browserbackend.Command{Method: "Page.navigate", SessionID: cv.tab,
					Params: json.RawMessage(fmt.Sprintf(`{"url":%q}`, site+"/log?who="+who))})
				require.NoError(t, err)
				var nav struct {
					FrameID string `json:"frameId"`
				}
				require.NoError(t, json.Unmarshal(raw, &nav))
				frames[nav.FrameID] = cv.name
			}
			// seen collects a conversation's events until its tab's
			// frameNavigated to who arrives; every event it received must
			// not name the other conversation's page or frame.
			seen := func(cv *conv, who string) {
				t.Helper()
				for {
					select {
					case ev := <-cv.events:
						var p struct {
							FrameID string `json:"frameId"`
							Frame   struct {
								ID  string `json:"id"`
								URL string `json:"url"`
							} `json:"frame"`
						}
						_ = json.Unmarshal(ev.Params, &p)
						for _, f := range []string{p.FrameID, p.Frame.ID} {
							if owner, ok := frames[f]; ok {
								require.Equal(t, cv.name, owner, "%s received %s of the other tab: %s", cv.name, ev.Method, ev.Params)
							}
						}
						for _, other := range convs {
							if other != cv {
								require.NotContains(t, string(ev.Params), "who="+other.name, "%s received %s", cv.name, ev.Method)
								require.NotContains(t, string(ev.Params), "log-"+other.name, "%s received %s", cv.name, ev.Method)
							}
						}
						if ev.Method == "Page.frameNavigated" && strings.HasSuffix(p.Frame.URL, "who="+who) {
							return
						}
					case <-ctx.Done():
						t.Fatalf("%s never saw its tab navigate to %s", cv.name, who)
					}
				}
			}
			a, b := convs[0], convs[1]
			navigate(a, "A")
			navigate(b, "B")
			// A's second navigation is posted after all of B's events (the
			// client posts in order), so when A has seen it, every event of
			// B's navigation has been routed.
			navigate(a, "A2")
			seen(a, "A2")
			seen(b, "B")
			navigate(b, "B2")
			seen(b, "B2")
			select {
			case ev := <-a.events:
				var p struct {
					FrameID string `json:"frameId"`
				}
				_ = json.Unmarshal(ev.Params, &p)
				require.NotEqual(t, "B", frames[p.FrameID], "A received %s of B's tab", ev.Method)
			default:
			}
		})
	}
}
