package tools

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/guard"
	cdptarget "github.com/chromedp/cdproto/target"
)

// A navigation the page asks for (a link, a form, location = …) to an
// off-list URL is recorded in the open windows when it is requested, before
// they learn of the navigation: a call whose settle ends on a late signal of
// the previous page (a kept watch) still reports it, instead of succeeding
// while the interception is yet to refuse the request. What the check leaves
// to the interception: subframes, other schemes, and a page whose target id
// is not known.
func TestARequestedNavigationOffTheListIsRecordedWhenItIsRequested(t *testing.T) {
	g, err := guard.New(guard.Policy{AllowedDomains: []string{"allowed.test"},
		Resolver: guard.ResolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, self, frame, url string
		refused                bool
	}{
		{"main frame, off the list", "T1", "T1", "https://blocked.test/x", true},
		{"main frame, a form post off the list", "T1", "T1", "http://blocked.test/submit", true},
		{"main frame, on the list", "T1", "T1", "https://allowed.test/next", false},
		{"a javascript: link", "T1", "T1", "javascript:void(0)", false},
		{"a subframe", "T1", "F2", "https://blocked.test/ad", false},
		{"the page's target id unknown", "", "T1", "https://blocked.test/x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &watch{g: g, life: context.Background(), wins: map[*window]struct{}{}, self: targetID(tc.self)}
			win := w.begin("click")
			w.onRequestedNavigation([]byte(`{"frameId":"` + tc.frame + `","reason":"formSubmissionPost","url":"` + tc.url + `","disposition":"currentTab"}`))
			select {
			case <-win.navCh:
			default:
				t.Fatal("the window did not learn of the navigation")
			}
			v := w.firstViolation(win)
			if !tc.refused {
				assert.NoError(t, v)
				return
			}
			var ge *guard.Error
			require.ErrorAs(t, v, &ge)
			assert.Equal(t, guard.CodeForbidden, ge.Code)
			assert.Equal(t, tc.url, ge.URL)
		})
	}
}

func targetID(s string) cdptarget.ID { return cdptarget.ID(s) }
