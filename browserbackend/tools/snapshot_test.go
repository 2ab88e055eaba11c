package tools_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// paragraphs returns a page of n numbered paragraphs (two snapshot nodes
// each: the paragraph and its text).
func paragraphs(n int) string {
	var b strings.Builder
	b.WriteString("<!doctype html><title>many</title>")
	for i := range n {
		fmt.Fprintf(&b, "<p>para %d</p>\n", i)
	}
	return b.String()
}

// A page whose tree is larger than the default cap: the snapshot stops at
// DefaultSnapshotMaxNodes, and its text (what an agent reads) ends with a
// line that says it was cut; a page below the cap comes whole, with no such
// line.
func TestSnapshotLargerThanTheCapSaysItWasCut(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/over":  paragraphs(tools.DefaultSnapshotMaxNodes/2 + 100),
		"/under": paragraphs(1000),
	})
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "cap"}

	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/over"})
	require.NoError(t, err)
	snap, err := tl.Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.True(t, snap.Truncated)
	assert.Len(t, snap.Nodes, tools.DefaultSnapshotMaxNodes)
	lines := strings.Split(strings.TrimSuffix(snap.Text, "\n"), "\n")
	require.Len(t, lines, tools.DefaultSnapshotMaxNodes+1, "every node's line, then the notice")
	last := lines[len(lines)-1]
	assert.Contains(t, last, fmt.Sprintf("snapshot cut at %d nodes", tools.DefaultSnapshotMaxNodes))
	assert.Contains(t, last, "max_nodes")
	assert.NotContains(t, snap.Text, fmt.Sprintf("para %d", tools.DefaultSnapshotMaxNodes/2+99), "the last paragraph is past the cap")

	_, err = tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/under"})
	require.NoError(t, err)
	snap, err = tl.Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.False(t, snap.Truncated)
	assert.Contains(t, snap.Text, `"para 999"`)
	assert.NotContains(t, snap.Text, "snapshot cut")
}

// A page with frames before, between and after its own text, one of them
// holding a frame of its own: every frame's tree is in the snapshot, each
// under its iframe element, in document order.
func TestSnapshotMultiFramePageIsInDocumentOrder(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, map[string]string{
		"/top": `<!doctype html><title>top</title><p>top start</p>
<iframe src="/a" title="frame a"></iframe><p>top middle</p>
<iframe src="/b" title="frame b"></iframe><p>top end</p>`,
		"/a": `<!doctype html><title>a</title><p>inside a</p><button>a button</button>`,
		"/b": `<!doctype html><title>b</title><p>b before</p><iframe src="/c" title="frame c"></iframe><p>b after</p>`,
		"/c": `<!doctype html><title>c</title><p>inside c</p>`,
	})
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "frames"}
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/top"})
	require.NoError(t, err)
	snap, err := tl.Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	require.Empty(t, snap.SkippedFrames)

	order := []string{`"top start"`, `- frame "` + srv.URL + `/a"`, `"inside a"`, `"a button"`, `"top middle"`,
		`- frame "` + srv.URL + `/b"`, `"b before"`, `- frame "` + srv.URL + `/c"`, `"inside c"`, `"b after"`, `"top end"`}
	at := -1
	for _, s := range order {
		i := strings.Index(snap.Text, s)
		require.GreaterOrEqual(t, i, 0, "%s is in the snapshot:\n%s", s, snap.Text)
		assert.Greater(t, i, at, "%s comes after the line before it in the list:\n%s", s, snap.Text)
		at = i
	}
	depth := func(s string) int {
		for _, line := range strings.Split(snap.Text, "\n") {
			if strings.Contains(line, s) {
				return len(line) - len(strings.TrimLeft(line, " "))
			}
		}
		return -1
	}
	assert.Greater(t, depth(`"inside c"`), depth(`"b before"`), "a nested frame is indented under its parent frame")
	for _, n := range snap.Nodes {
		if n.Name == "inside c" {
			assert.Equal(t, srv.URL+"/c", n.Frame)
		}
	}
	btn := findNode(t, snap, "button", "a button")
	require.NotEmpty(t, btn.Ref)
	_, err = tl.Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: btn.Ref}})
	require.NoError(t, err, "a ref from a child frame works")
}

// BenchmarkSnapshot times tools.Snapshot on a kept cdp-inspect client over
// the pages of the MCP comparison (bench/harness): a 3,000-word article and
// a page of 5,000 elements.
func BenchmarkSnapshot(b *testing.B) {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing")
	var art strings.Builder
	art.WriteString("<!doctype html><title>article</title><article><h1>A long article</h1>")
	for i, n := 0, 0; n < 3000; i++ {
		if i%5 == 0 {
			fmt.Fprintf(&art, "<h2>Section %d</h2>", i/5+1)
		}
		art.WriteString("<p>")
		for j := 0; j < 60 && n < 3000; j++ {
			art.WriteString(words[(n*7+i)%len(words)] + " ")
			n++
		}
		art.WriteString("</p>\n")
	}
	var big strings.Builder
	big.WriteString("<!doctype html><title>big</title><h1>Many elements</h1><table>")
	for i := range 712 {
		fmt.Fprintf(&big, `<tr><td>row %d</td><td><a href="#r%d">item %d</a></td><td><button type="button">act %d</button><span> ok</span></td></tr>`, i, i, i, i)
	}
	big.WriteString("</table>")
	srv := chromiumtest.FixtureServer(b, map[string]string{"/article": art.String(), "/big": big.String()})
	br := chromiumtest.Start(b)
	insp := cdpInspectProvider(b, br)
	tl := toolsOver(b, insp, tools.Options{CloseConversation: insp.CloseConversation, KeepClients: true})
	inv := browserbackend.Invocation{ConversationID: "bench"}
	ctx := context.Background()
	for _, pg := range []string{"/article", "/big"} {
		b.Run(strings.TrimPrefix(pg, "/"), func(b *testing.B) {
			if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: srv.URL + pg}); err != nil {
				b.Fatal(err)
			}
			var ds []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := tl.Snapshot(ctx, inv, tools.SnapshotInput{}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2])/1e6, "median-ms")
		})
	}
}
