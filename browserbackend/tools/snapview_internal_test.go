package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// page is a rendered tree as the DOM source would give it.
var viewPage = []SnapshotNode{
	{Role: "banner", Ref: "e1", Depth: 0},
	{Role: "link", Name: "Home", Ref: "e2", Depth: 1},
	{Role: "main", Ref: "e3", Depth: 0},
	{Role: "heading", Name: "Orders", Ref: "e4", Depth: 1},
	{Role: "paragraph", Ref: "e5", Depth: 1},
	{Role: "StaticText", Name: "You have two orders.", Depth: 2},
	{Role: "form", Name: "Search orders", Ref: "e6", Depth: 1},
	{Role: "LabelText", Ref: "e7", Depth: 2},
	{Role: "StaticText", Name: "Order number", Depth: 3},
	{Role: "textbox", Name: "Order number", Ref: "e8", Depth: 2},
	{Role: "button", Name: "Find", Ref: "e9", Depth: 2},
	{Role: "list", Ref: "e10", Depth: 1},
	{Role: "listitem", Ref: "e11", Depth: 2},
	{Role: "StaticText", Name: "Order 17: shipped", Depth: 3},
	{Role: "clickable", Name: "Details", Ref: "e12", Depth: 3},
	{Role: "frame", Name: "https://pay.example/", Depth: 1},
	{Role: "StaticText", Name: "[not read]", Depth: 2, Frame: "https://pay.example/"},
}

func viewText(t *testing.T, in SnapshotInput) string {
	t.Helper()
	v, err := viewOf("snapshot", in)
	require.NoError(t, err)
	nodes, err := v.apply("snapshot", viewPage)
	require.NoError(t, err)
	r := renderLines(nodes, DefaultSnapshotMaxNodes, "")
	return r.b.String()
}

// Each way of narrowing a snapshot keeps what it says, with the lines that
// place what it keeps.
func TestSnapshotViewNarrowsTheTree(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   SnapshotInput
		want string
	}{
		{"the subtree of a ref, at depth 0", SnapshotInput{Ref: "e10"}, `- list [ref=e10]
  - listitem [ref=e11]
    - text "Order 17: shipped"
    - clickable "Details" [ref=e12]
`},
		{"two levels", SnapshotInput{MaxDepth: 2}, `- banner [ref=e1]
  - link "Home" [ref=e2]
- main [ref=e3]
  - heading "Orders" [ref=e4]
  - paragraph [ref=e5]
  - form "Search orders" [ref=e6]
  - list [ref=e10]
  - frame "https://pay.example/"
`},
		{"what an agent acts on, under its landmarks, forms and headings", SnapshotInput{Interactive: true}, `- banner [ref=e1]
  - link "Home" [ref=e2]
- main [ref=e3]
  - heading "Orders" [ref=e4]
  - form "Search orders" [ref=e6]
    - textbox "Order number" [ref=e8]
    - button "Find" [ref=e9]
  - clickable "Details" [ref=e12]
  - frame "https://pay.example/"
    - text "[not read]"
`},
		{"a search, each match under its ancestors", SnapshotInput{Search: "ORDER N"}, `- main [ref=e3]
  - form "Search orders" [ref=e6]
    - LabelText [ref=e7]
      - text "Order number"
    - textbox "Order number" [ref=e8]
`},
		{"a search in a subtree", SnapshotInput{Ref: "e6", Search: "find"}, `- form "Search orders" [ref=e6]
  - button "Find" [ref=e9]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, viewText(t, tc.in))
		})
	}
}

func TestSnapshotViewRefusesWhatItCannotDo(t *testing.T) {
	for _, in := range []SnapshotInput{
		{Ref: "x12"}, {Ref: "fzzzzzzzze1"}, {MaxDepth: -1}, {MaxDepth: maxDOMDepth + 1},
		{Search: " \t"}, {Search: strings.Repeat("a", MaxSnapshotSearchBytes+1)},
	} {
		_, err := viewOf("snapshot", in)
		assert.ErrorIs(t, err, ErrInvalidInput, "%+v", in)
	}
	v, err := viewOf("snapshot", SnapshotInput{Ref: "e99"})
	require.NoError(t, err)
	_, err = v.apply("snapshot", viewPage)
	assert.ErrorIs(t, err, ErrNotFound)
	_, _, err = parseAnyRef("f3a9c01b2e42")
	assert.NoError(t, err, "a frame ref")
}

// A diff names what appeared, changed and disappeared, each by its own
// line; a page that changed more than it stayed is shown whole.
func TestSnapshotDiffSaysWhatChanged(t *testing.T) {
	cur := append([]SnapshotNode(nil), viewPage...)
	cur[9].Value = "17"                                                       // the field was typed into
	cur[13].Name = "Order 17: delivered"                                      // a text changed
	cur = append(cur[:1], cur[2:]...)                                         // the link went away
	cur = append(cur, SnapshotNode{Role: "dialog", Name: "Done", Ref: "e40"}) // a dialog opened
	d, lines := diffView("snapshot", snapView{}, &keptSnapshot{nodes: viewPage}, cur, false, DefaultSnapshotMaxNodes)
	assert.False(t, d.Whole)
	assert.Equal(t, `[changes since the previous snapshot: 2 appeared, 1 changed, 2 disappeared]
+ text "Order 17: delivered"
+ dialog "Done" [ref=e40]
~ textbox "Order number" value="17" [ref=e8] (was: textbox "Order number" [ref=e8])
- link "Home" [ref=e2]
- text "Order 17: shipped"
`, lines.b.String())

	d, lines = diffView("snapshot", snapView{}, &keptSnapshot{nodes: viewPage}, viewPage, false, DefaultSnapshotMaxNodes)
	assert.Zero(t, d.size())
	assert.Equal(t, "[no change since the previous snapshot]\n", lines.b.String())

	other := []SnapshotNode{{Role: "heading", Name: "Elsewhere", Ref: "e100"}}
	d, lines = diffView("snapshot", snapView{}, &keptSnapshot{nodes: viewPage}, other, false, DefaultSnapshotMaxNodes)
	assert.True(t, d.Whole)
	assert.Equal(t, wholeNote(true)+"- heading \"Elsewhere\" [ref=e100]\n", lines.b.String())

	d, lines = diffView("snapshot", snapView{}, nil, other, false, DefaultSnapshotMaxNodes)
	assert.True(t, d.Whole)
	assert.True(t, strings.HasPrefix(lines.b.String(), wholeNote(false)))
}

// The kept snapshots stay within their bounds, the least recently used
// going first.
func TestSnapMemoryIsBounded(t *testing.T) {
	var m snapMemory
	for i := range maxKeptSnapshots + 10 {
		m.put(keptSnapshot{conv: fmt.Sprint(i), nodes: make([]SnapshotNode, 1)})
	}
	assert.Equal(t, maxKeptSnapshots, m.order.Len())
	_, ok := m.get("0")
	assert.False(t, ok, "the oldest went first")
	_, ok = m.get("10")
	require.True(t, ok)
	m.put(keptSnapshot{conv: "big", nodes: make([]SnapshotNode, maxKeptSnapshotNodes)})
	assert.LessOrEqual(t, m.nodes, maxKeptSnapshotNodes)
	_, ok = m.get("big")
	assert.True(t, ok)
	_, ok = m.get("10")
	assert.False(t, ok, "made room for the newest")
	assert.Equal(t, 1, m.order.Len())
	m.forget("big")
	assert.Zero(t, m.nodes)
	assert.Zero(t, m.order.Len())
}

// Narrowed, the DOM source shows an element that only a click listener
// makes interactive, unless it relays the clicks of what it holds.
func TestDOMSnapshotShowsClickableElementsWhenNarrowed(t *testing.T) {
	res := snapOf(
		el("DIV").clicks().with(txt("Open the menu")),
		el("DIV").clicks().with(el("BUTTON").with(txt("Inner"))),
		el("SPAN").with(txt("plain")),
	)
	docs := newDOMDocs(res)
	r := &domRenderer{docs: docs, placed: make([]bool, len(docs)), clickable: true}
	r.max = DefaultSnapshotMaxNodes
	r.renderDoc(0, 0, "")
	assert.Equal(t, `- clickable "Open the menu" [ref=e4]
- button "Inner" [ref=e7]
- text "plain"
`, r.b.String())
	assert.Equal(t, "- text \"Open the menu\"\n- button \"Inner\" [ref=e7]\n- text \"plain\"\n", renderSnap(t, res), "not narrowed: as before")
	assert.Equal(t, strings.Repeat("é", maxClickableName/2)+"…", clickableName(strings.Repeat("é", 60)))
}
