package tools

import (
	"strings"
	"testing"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A getFullAXTree answer shaped like Chromium's: properties, sources and
// ignored reasons beside the fields the snapshot reads, string ids, an
// escaped name, a numeric value, an ignored wrapper and an inline text box.
const axAnswer = `{"nodes":[
 {"nodeId":"1","ignored":false,"role":{"type":"internalRole","value":"RootWebArea"},"chromeRole":{"type":"internalRole","value":144},
  "name":{"type":"computedString","value":"Doc","sources":[{"type":"relatedElement","attribute":"aria-labelledby"}]},
  "properties":[{"name":"focusable","value":{"type":"booleanOrUndefined","value":true}}],"childIds":["2","5"],"backendDOMNodeId":1,"frameId":"F"},
 {"nodeId":"2","ignored":true,"ignoredReasons":[{"name":"uninteresting","value":{"type":"boolean","value":true}}],
  "role":{"type":"role","value":"none"},"parentId":"1","childIds":["3","4"],"backendDOMNodeId":7},
 {"nodeId":"3","ignored":false,"role":{"type":"role","value":"button"},"name":{"type":"computedString","value":"  Say \"hi\"\u00a0 now "},
  "parentId":"2","childIds":["6"],"backendDOMNodeId":8},
 {"nodeId":"6","ignored":false,"role":{"type":"role","value":"StaticText"},"name":{"type":"computedString","value":"Say \"hi\" now"},"parentId":"3","childIds":["9"],"backendDOMNodeId":10},
 {"nodeId":"9","ignored":false,"role":{"type":"role","value":"InlineTextBox"},"name":{"type":"computedString","value":"Say"},"parentId":"6","childIds":[]},
 {"nodeId":"4","ignored":false,"role":{"type":"role","value":"slider"},"name":{"type":"computedString","value":"Volume"},"value":{"type":"number","value":0.5},"parentId":"2","childIds":[],"backendDOMNodeId":11},
 {"nodeId":"5","ignored":false,"role":{"type":"role","value":"Iframe"},"name":{"type":"computedString","value":""},"parentId":"1","childIds":[],"backendDOMNodeId":12},
 {"nodeId":"-100","ignored":false,"role":{"type":"role","value":"generic"},"parentId":"5","childIds":[]}
]}`

const axFrame = `{"nodes":[
 {"nodeId":"1","ignored":false,"role":{"type":"internalRole","value":"RootWebArea"},"childIds":["2"],"backendDOMNodeId":3},
 {"nodeId":"2","ignored":false,"role":{"type":"role","value":"heading"},"name":{"type":"computedString","value":"Inside"},"parentId":"1","childIds":[],"backendDOMNodeId":4}
]}`

func decodeAX(t *testing.T, s string) axTree {
	t.Helper()
	var tree axTree
	require.NoError(t, jsonv2.Unmarshal([]byte(s), &tree))
	return tree
}

func TestAXTreeDecodesOnlyWhatTheSnapshotRenders(t *testing.T) {
	tree := decodeAX(t, axAnswer)
	require.Len(t, tree.nodes, 8)
	b := tree.nodes[2]
	assert.Equal(t, int64(3), b.id)
	assert.Equal(t, int64(2), b.parent)
	assert.Equal(t, "button", b.role)
	assert.Equal(t, `Say "hi" now`, b.name, "escapes undone, white space collapsed")
	assert.Equal(t, []int64{6}, tree.kids[b.kid0:b.kid0+b.nkids])
	assert.True(t, tree.nodes[1].ignored)
	assert.Equal(t, "0.5", tree.nodes[5].value)
	assert.Equal(t, int64(-100), tree.nodes[7].id)
	assert.False(t, tree.nodes[0].hasParent)

	var bad axTree
	assert.Error(t, jsonv2.Unmarshal([]byte(`{"nodes":[{"nodeId":"x"}]}`), &bad), "a non-numeric id is refused")
	assert.Error(t, jsonv2.Unmarshal([]byte(`{"nodes":[1]}`), &bad))
}

func TestRendererPlacesAFrameUnderItsIframeAndSaysWhenItCuts(t *testing.T) {
	frames := []snapFrame{
		{parent: -1, tree: decodeAX(t, axAnswer)},
		{url: "http://x.test/f", parent: 0, owner: 12, tree: decodeAX(t, axFrame)},
	}
	r := newRenderer(100, frames)
	r.renderFrames()
	want := `- button "Say \"hi\" now" [ref=e8]
- slider "Volume" value="0.5" [ref=e11]
- Iframe [ref=e12]
  - frame "http://x.test/f"
    - heading "Inside" [ref=e4]
`
	assert.Equal(t, want, r.b.String())
	assert.False(t, r.truncated)
	require.Len(t, r.nodes, 5)
	assert.Equal(t, "http://x.test/f", r.nodes[4].Frame)

	r = newRenderer(2, frames)
	r.renderFrames()
	assert.True(t, r.truncated)
	assert.Len(t, r.nodes, 2)
	lines := strings.Split(strings.TrimSuffix(r.b.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], "snapshot cut at 2 nodes")
}
