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

// tnode is an element (tag) or a text node (tag "") of a hand-built DOM
// snapshot answer; built with snapOf.
type tnode struct {
	tag      string
	attrs    []string // name, value, …
	text     string   // a text node's DOM text
	shown    string   // a text node's rendered text when it differs from text
	kids     []tnode
	noLayout bool   // no layout object (display:none, <title>, …)
	hidden   bool   // visibility:hidden
	pseudo   string // "before", "after", "marker": a generated box with text shown
	click    bool   // responds to clicks (isClickable)
}

func txt(s string) tnode                            { return tnode{text: s} }
func el(tag string, attrs ...string) tnode          { return tnode{tag: tag, attrs: attrs} }
func (n tnode) with(kids ...tnode) tnode            { n.kids = kids; return n }
func (n tnode) hide() tnode                         { n.hidden = true; return n }
func (n tnode) clicks() tnode                       { n.click = true; return n }
func (n tnode) unrendered() tnode                   { n.noLayout = true; return n }
func pseudoBox(kind, shown string) tnode            { return tnode{tag: "::" + kind, pseudo: kind, shown: shown} }
func rendered(dom, shown string) tnode              { return tnode{text: dom, shown: shown} }
func docOf(body ...tnode) tnode                     { return el("HTML").with(el("BODY").with(body...)) }
func renderTree(t *testing.T, body ...tnode) string { return renderSnap(t, snapOf(body...)) }

// snapOf builds a one-document answer of #document > HTML > BODY > body.
func snapOf(body ...tnode) *domsnapshot.CaptureSnapshotResult {
	var strs []string
	index := map[string]int64{}
	str := func(s string) domsnapshot.StringIndex {
		if i, ok := index[s]; ok {
			return domsnapshot.StringIndex(i)
		}
		index[s] = int64(len(strs))
		strs = append(strs, s)
		return domsnapshot.StringIndex(index[s])
	}
	nodes := &domsnapshot.NodeTreeSnapshot{PseudoType: &domsnapshot.RareStringData{}}
	layout := &domsnapshot.LayoutTreeSnapshot{}
	var add func(n tnode, parent int64, hidden bool)
	add = func(n tnode, parent int64, hidden bool) {
		i := int64(len(nodes.ParentIndex))
		hidden = hidden || n.hidden
		nodes.ParentIndex = append(nodes.ParentIndex, parent)
		nodes.BackendNodeID = append(nodes.BackendNodeID, cdp.BackendNodeID(i+1))
		var attrs domsnapshot.ArrayOfStrings
		for _, a := range n.attrs {
			attrs = append(attrs, int64(str(a)))
		}
		nodes.Attributes = append(nodes.Attributes, attrs)
		shown := n.shown
		if n.tag == "" {
			nodes.NodeType = append(nodes.NodeType, 3)
			nodes.NodeName = append(nodes.NodeName, str("#text"))
			nodes.NodeValue = append(nodes.NodeValue, str(n.text))
			if shown == "" {
				shown = n.text
			}
		} else {
			nodes.NodeType = append(nodes.NodeType, 1)
			nodes.NodeName = append(nodes.NodeName, str(n.tag))
			nodes.NodeValue = append(nodes.NodeValue, -1)
		}
		if n.click {
			if nodes.IsClickable == nil {
				nodes.IsClickable = &domsnapshot.RareBooleanData{}
			}
			nodes.IsClickable.Index = append(nodes.IsClickable.Index, i)
		}
		if n.pseudo != "" {
			nodes.PseudoType.Index = append(nodes.PseudoType.Index, i)
			nodes.PseudoType.Value = append(nodes.PseudoType.Value, str(n.pseudo))
		}
		if !n.noLayout {
			vis := "visible"
			if hidden {
				vis = "hidden"
			}
			layout.NodeIndex = append(layout.NodeIndex, i)
			layout.Styles = append(layout.Styles, domsnapshot.ArrayOfStrings{int64(str(vis))})
			t := domsnapshot.StringIndex(-1)
			if shown != "" {
				t = str(shown)
			}
			layout.Text = append(layout.Text, t)
		}
		for _, k := range n.kids {
			if n.noLayout {
				k.noLayout = true
			}
			add(k, i, hidden)
		}
	}
	add(tnode{tag: "#document"}.with(docOf(body...)), -1, false)
	nodes.NodeType[0] = 9
	return &domsnapshot.CaptureSnapshotResult{Strings: strs, Documents: []*domsnapshot.DocumentSnapshot{
		{DocumentURL: str("http://t/"), Title: str("t"), FrameID: str("F"), Nodes: nodes, Layout: layout}}}
}

func renderSnap(t *testing.T, res *domsnapshot.CaptureSnapshotResult) string {
	t.Helper()
	docs := newDOMDocs(res)
	r := &domRenderer{docs: docs, placed: make([]bool, len(docs))}
	r.max = DefaultSnapshotMaxNodes
	r.renderDoc(0, 0, "")
	r.finish()
	return r.b.String()
}

// Names, values and hiding as Chromium's accessibility tree has them, for
// the cases a review of the DOM source found it wrong (each row failed on
// the first version).
func TestDOMSnapshotNamesAndHidesAsChromiumDoes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       []tnode
		want, omit []string
	}{
		{"aria-hidden in any case hides", []tnode{el("DIV", "aria-hidden", "TRUE").with(el("BUTTON").with(txt("Hidden")))},
			nil, []string{"Hidden"}},
		{"aria-hidden=false hides nothing", []tnode{el("DIV", "aria-hidden", "false").with(el("BUTTON").with(txt("Shown")))},
			[]string{`button "Shown"`}, nil},
		{"a hidden image adds nothing to a name", []tnode{el("BUTTON").with(txt("Go"), el("IMG", "alt", "secret alt").hide())},
			[]string{`button "Go"`}, []string{"secret"}},
		{"a wrapping label names its own control only", []tnode{el("LABEL").with(txt("Email "), el("INPUT", "type", "email"), el("BUTTON").with(txt("Clear")))},
			[]string{`button "Clear"`}, []string{`button "Email`}},
		{"a checkbox's label with a link stays", []tnode{el("INPUT", "type", "checkbox", "id", "t"), el("LABEL", "for", "t").with(txt("I accept the "), el("A", "href", "/terms").with(txt("terms")))},
			[]string{`checkbox "I accept the terms"`, `link "terms"`}, nil},
		{"a plain checkbox label is folded", []tnode{el("INPUT", "type", "checkbox", "id", "t"), el("LABEL", "for", "t").with(txt("Remember"))},
			[]string{`checkbox "Remember"`}, []string{"LabelText"}},
		{"the label of a hidden custom toggle stays", []tnode{el("INPUT", "type", "checkbox", "id", "t").unrendered(), el("LABEL", "for", "t").with(txt("Dark mode"))},
			[]string{`LabelText`, `text "Dark mode"`}, nil},
		{"aria-labelledby reads hidden text", []tnode{el("SPAN", "id", "l").with(txt("Search site")).unrendered(), el("INPUT", "aria-labelledby", "l")},
			[]string{`textbox "Search site"`}, nil},
		{"an editable box's text is its value", []tnode{el("DIV", "role", "textbox", "contenteditable", "", "aria-label", "Message").with(txt("Hello there"))},
			[]string{`textbox "Message" value="Hello there"`}, nil},
		{"an image's aria-label names its link", []tnode{el("A", "href", "/").with(el("IMG", "src", "logo.png", "aria-label", "Home"))},
			[]string{`link "Home"`}, nil},
		{"an SVG's title names its button", []tnode{el("BUTTON").with(el("svg").with(el("title").with(txt("Search")).unrendered()))},
			[]string{`button "Search"`}, nil},
		{"::after comes after the content", []tnode{el("A", "href", "/d").with(pseudoBox("after", " (opens new tab)"), txt("Docs"))},
			[]string{`link "Docs (opens new tab)"`}, nil},
		{"text is read as rendered", []tnode{el("SPAN").with(rendered("1234", "••••")), el("P").with(rendered("shout", "SHOUT"))},
			[]string{`text "••••"`, `text "SHOUT"`}, []string{"1234", "shout"}},
		{"a password field as a meter shows no value", []tnode{el("INPUT", "type", "password", "role", "meter", "value", "hunter2")},
			[]string{"meter"}, []string{"hunter2"}},
		{"a focusable element keeps its role", []tnode{el("BUTTON", "role", "presentation").with(txt("Save"))},
			[]string{`button "Save"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderTree(t, tc.body...)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			for _, o := range tc.omit {
				assert.NotContains(t, out, o)
			}
		})
	}
}

// What a page builds to make a snapshot expensive stays bounded: a name is
// at most maxName bytes however often aria-labelledby repeats an id or
// however deep names nest, and a nesting deeper than the walk goes is said
// to be cut, without a stack overflow.
func TestDOMSnapshotBoundsWhatAPageCanMakeItDo(t *testing.T) {
	long := strings.Repeat("word ", 4400) // 22 kB
	ids := strings.TrimSpace(strings.Repeat("x ", 5000))
	out := renderTree(t, el("DIV", "id", "x").with(txt(long)), el("BUTTON", "aria-labelledby", ids))
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), maxName+64)
	}

	nest := txt(long)
	for range 250 {
		nest = el("DIV", "role", "treeitem").with(nest)
	}
	out = renderTree(t, nest)
	assert.Less(t, len(out), 250*(maxName+600), "each of the 250 names is cut at maxName")

	deep := el("SPAN").with(txt("bottom"))
	for range 5000 {
		deep = el("DIV").with(deep)
	}
	out = renderTree(t, deep)
	assert.Contains(t, out, fmt.Sprintf("nested deeper than %d levels", maxDOMDepth))
	assert.NotContains(t, out, "bottom")
}

// Columns longer than the node count (a malformed answer) are cut to it:
// ids and labels found past the end are never used.
func TestDOMSnapshotCutsColumnsToTheNodeCount(t *testing.T) {
	res := snapOf(el("BUTTON", "aria-labelledby", "x").with(txt("b")), el("INPUT", "id", "u"))
	n := res.Documents[0].Nodes
	n.NodeType = append(n.NodeType, 1, 1)
	n.NodeName = append(n.NodeName, 0)
	n.Attributes = append(n.Attributes, domsnapshot.ArrayOfStrings{int64(len(res.Strings)), int64(len(res.Strings) + 1)})
	res.Strings = append(res.Strings, "id", "x")
	out := renderSnap(t, res)
	assert.Contains(t, out, `button "b"`)
}
