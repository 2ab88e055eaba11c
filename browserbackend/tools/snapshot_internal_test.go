package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/domsnapshot"
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

// syntheticAX returns a getFullAXTree answer of rows table rows shaped like
// Chromium's for the 5,000-element page of the MCP benchmark (row, cells,
// link, button, static texts and inline text boxes, each with the
// properties Chromium sends).
func syntheticAX(rows int) []byte {
	var b strings.Builder
	id := 1
	node := func(role, name string, parent int, kids []int, ignored bool) {
		if b.Len() > len(`{"nodes":[`) {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"nodeId":"%d","ignored":%t,"role":{"type":"role","value":%q},"chromeRole":{"type":"internalRole","value":101},`+
			`"name":{"type":"computedString","value":%q,"sources":[{"type":"relatedElement","attribute":"aria-labelledby"},{"type":"attribute","attribute":"aria-label"},{"type":"contents","value":{"type":"computedString","value":%q}}]},`+
			`"properties":[{"name":"focusable","value":{"type":"booleanOrUndefined","value":true}},{"name":"editable","value":{"type":"token","value":"plaintext"}}],`,
			id, ignored, role, name, name)
		if parent > 0 {
			fmt.Fprintf(&b, `"parentId":"%d",`, parent)
		}
		b.WriteString(`"childIds":[`)
		for i, k := range kids {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d"`, k)
		}
		fmt.Fprintf(&b, `],"backendDOMNodeId":%d,"frameId":"ABCDEF0123456789"}`, id+1000)
		id++
	}
	b.WriteString(`{"nodes":[`)
	rowIDs := make([]int, rows)
	for i := range rowIDs {
		rowIDs[i] = 3 + i*12
	}
	node("RootWebArea", "big", 0, []int{2}, false)
	node("table", "", 1, rowIDs, false)
	for i := range rows {
		r := id
		node("row", fmt.Sprintf("row %d item %d act %d ok", i, i, i), 2, []int{r + 1, r + 4, r + 7}, false)
		node("cell", fmt.Sprintf("row %d", i), r, []int{r + 2}, false)
		node("StaticText", fmt.Sprintf("row %d", i), r+1, []int{r + 3}, false)
		node("InlineTextBox", "", r+2, nil, false)
		node("cell", fmt.Sprintf("item %d", i), r, []int{r + 5}, false)
		node("link", fmt.Sprintf("item %d", i), r+4, []int{r + 6}, false)
		node("StaticText", fmt.Sprintf("item %d", i), r+5, nil, false)
		node("cell", "", r, []int{r + 8, r + 10}, false)
		node("button", fmt.Sprintf("act %d", i), r+7, []int{r + 9}, false)
		node("StaticText", fmt.Sprintf("act %d", i), r+8, nil, false)
		node("generic", "", r+7, []int{r + 11}, true)
		node("StaticText", "ok", r+10, nil, false)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkSnapshotDecodeRender is the Go side of a snapshot of the
// 5,000-element page, without the browser: decoding the answer and
// rendering the text ("render"), against decoding it into cdproto's
// accessibility types as the snapshot did before ("cdproto-decode").
func BenchmarkSnapshotDecodeRender(b *testing.B) {
	raw := syntheticAX(712)
	b.Run("render", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var tree axTree
			if err := jsonv2.Unmarshal(raw, &tree); err != nil {
				b.Fatal(err)
			}
			r := newRenderer(DefaultSnapshotMaxNodes, []snapFrame{{parent: -1, tree: tree}})
			r.renderFrames()
		}
	})
	b.Run("cdproto-decode", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var res accessibility.GetFullAXTreeResult
			if err := jsonv2.Unmarshal(raw, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A DOM snapshot answer is rendered from what it holds, and one that does
// not hold together (indexes out of range, a parent after its child, a
// frame that holds itself) renders what it can without a panic or a loop.
func TestDOMSnapshotRendersWhatTheAnswerHolds(t *testing.T) {
	strs := []string{"http://t/", "title", "F1", "#document", "HTML", "BODY", "BUTTON", "#text", "Send", "visible", "type", "button", "IFRAME", "hidden", "P", "gone"}
	layout := func(nodes ...int64) *domsnapshot.LayoutTreeSnapshot {
		l := &domsnapshot.LayoutTreeSnapshot{NodeIndex: nodes}
		for range nodes {
			l.Styles = append(l.Styles, domsnapshot.ArrayOfStrings{9})
			l.Text = append(l.Text, -1)
		}
		return l
	}
	good := &domsnapshot.DocumentSnapshot{DocumentURL: 0, Title: 1, FrameID: 2,
		Nodes: &domsnapshot.NodeTreeSnapshot{
			ParentIndex:   []int64{-1, 0, 1, 2, 3, 2, 5},
			NodeType:      []int64{9, 1, 1, 1, 3, 1, 3},
			NodeName:      []domsnapshot.StringIndex{3, 4, 5, 6, 7, 14, 7},
			NodeValue:     []domsnapshot.StringIndex{-1, -1, -1, -1, 8, -1, 15},
			BackendNodeID: []cdp.BackendNodeID{1, 2, 3, 4, 5, 6, 7},
			Attributes:    []domsnapshot.ArrayOfStrings{nil, nil, nil, {10, 11}, nil, nil, nil},
		},
		Layout: layout(0, 1, 2, 3, 4, 5, 6),
	}
	good.Layout.Styles[5] = domsnapshot.ArrayOfStrings{13} // the paragraph is visibility:hidden …
	good.Layout.Styles[6] = domsnapshot.ArrayOfStrings{13} // … and so is its text
	r := &domRenderer{docs: newDOMDocs(&domsnapshot.CaptureSnapshotResult{Documents: []*domsnapshot.DocumentSnapshot{good}, Strings: strs}), placed: make([]bool, 1)}
	r.max = 100
	r.renderDoc(0, 0, "")
	assert.Equal(t, "- button \"Send\" [ref=e4]\n", r.b.String())
	assert.Equal(t, "title", r.docs[0].title)

	bad := []*domsnapshot.DocumentSnapshot{
		{Nodes: &domsnapshot.NodeTreeSnapshot{ // columns shorter than the parents
			ParentIndex: []int64{-1, 0, 1}, NodeType: []int64{9}, NodeName: []domsnapshot.StringIndex{3}}},
		{DocumentURL: 99, Nodes: &domsnapshot.NodeTreeSnapshot{ // parents after children, strings out of range
			ParentIndex:   []int64{-1, 2, 1, 7},
			NodeType:      []int64{9, 1, 1, 3},
			NodeName:      []domsnapshot.StringIndex{3, 12, 500, 7},
			NodeValue:     []domsnapshot.StringIndex{-1, -1, -1, 400},
			BackendNodeID: []cdp.BackendNodeID{1, 2, 3, 4},
			Attributes:    []domsnapshot.ArrayOfStrings{nil, {10}, {600, 700}},
			// the iframe holds document 1 (itself) and 7 (none)
			ContentDocumentIndex: &domsnapshot.RareIntegerData{Index: []int64{1, 2}, Value: []int64{1, 7}},
		}, Layout: layout(0, 1, 2, 3, 42, -3)},
	}
	r = &domRenderer{docs: newDOMDocs(&domsnapshot.CaptureSnapshotResult{Documents: append([]*domsnapshot.DocumentSnapshot{good}, bad...), Strings: strs}), placed: make([]bool, 3)}
	r.max = 100
	for di := range r.docs {
		r.renderDoc(di, 0, "")
	}
	assert.NotContains(t, r.b.String(), "frame", "no document is rendered inside itself")
}
