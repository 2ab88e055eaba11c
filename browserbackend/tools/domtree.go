package tools

import (
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/domsnapshot"
)

// domStyles are the computed styles the DOM snapshot asks for, in this
// order: the element's own visibility decides whether it is shown (its
// children may still be).
var domStyles = []string{"visibility"}

// domDoc is one document of a DOMSnapshot.captureSnapshot answer, indexed
// for the walk. Node indexes are the answer's; -1 means none.
type domDoc struct {
	str     []string
	url     string
	title   string
	frameID string
	// target is the target id of the cross-site frame whose process the
	// document was read from ("" for the page's own): its refs are frame
	// refs.
	target string
	// at is the document's index among the snapshot's.
	at      int
	typ     []int64
	name    []domsnapshot.StringIndex
	value   []domsnapshot.StringIndex
	backend []cdp.BackendNodeID
	attrs   []domsnapshot.ArrayOfStrings
	// first and next are each node's first child and next sibling, in
	// document order (the answer lists nodes depth first).
	first, next []int32
	parent      []int32
	// laid is the node's layout object, -1 when it has none; live is true
	// when the node or one of its descendants has one (a subtree with none
	// is not rendered: display:none, a closed <details>, <head>).
	laid []int32
	live []bool
	// hidden is true for a node whose own visibility is hidden or collapse.
	hidden []bool
	// ltext is the text of the node's layout objects, as rendered (text
	// transforms and text security applied; a text node split by
	// ::first-letter has two, joined here).
	ltext []string
	// Sparse per-node data, keyed by node index.
	inputValue map[int32]string
	textValue  map[int32]string
	selected   map[int32]bool
	clickable  map[int32]bool
	contentDoc map[int32]int
	pseudo     map[int32]string
	// ids maps an id attribute to its element, labels a label's for
	// attribute to its labels; both built on first use.
	ids    map[string]int32
	labels map[string][]int32
}

// newDOMDocs indexes every document of res.
func newDOMDocs(res *domsnapshot.CaptureSnapshotResult) []*domDoc {
	return appendDOMDocs(nil, res, "")
}

// appendDOMDocs appends the documents of res, read from the process of the
// cross-site frame with target id target ("" for the page's own), to docs;
// their frames' document indexes are made indexes of the result.
func appendDOMDocs(docs []*domDoc, res *domsnapshot.CaptureSnapshotResult, target string) []*domDoc {
	base := len(docs)
	for _, d := range res.Documents {
		doc := newDOMDoc(res.Strings, d)
		doc.target, doc.at = target, len(docs)
		for k, v := range doc.contentDoc {
			doc.contentDoc[k] = v + base
		}
		docs = append(docs, doc)
	}
	return docs
}

// ref is node i's ref: a frame ref in a cross-site frame's document.
func (d *domDoc) ref(i int32) string {
	if d.target != "" {
		return frameRef(d.target, d.backend[i])
	}
	return Ref(d.backend[i])
}

func newDOMDoc(str []string, d *domsnapshot.DocumentSnapshot) *domDoc {
	doc := &domDoc{str: str}
	doc.url, doc.title, doc.frameID = doc.s(d.DocumentURL), doc.s(d.Title), doc.s(d.FrameID)
	n := d.Nodes
	if n == nil {
		return doc
	}
	count := len(n.ParentIndex)
	doc.typ, doc.name, doc.value, doc.backend, doc.attrs = n.NodeType, n.NodeName, n.NodeValue, n.BackendNodeID, n.Attributes
	if len(doc.typ) < count || len(doc.name) < count || len(doc.value) < count || len(doc.backend) < count {
		// A malformed answer: render nothing rather than index out of range.
		return doc
	}
	// Every column is cut to the node count, so that no loop over one of
	// them indexes past another.
	doc.typ, doc.name, doc.value, doc.backend = doc.typ[:count], doc.name[:count], doc.value[:count], doc.backend[:count]
	if len(doc.attrs) > count {
		doc.attrs = doc.attrs[:count]
	}
	doc.indexTree(n.ParentIndex)
	doc.indexLayout(d.Layout)
	doc.indexRare(n)
	return doc
}

// indexTree sets parent, first and next from the answer's parent column.
func (d *domDoc) indexTree(parents []int64) {
	count := len(parents)
	d.first, d.next, d.parent = make([]int32, count), make([]int32, count), make([]int32, count)
	last := make([]int32, count)
	for i := range count {
		d.first[i], d.next[i], last[i] = -1, -1, -1
	}
	for i, p := range parents {
		// A parent comes before its children; any other index is dropped, so
		// every walk up the tree ends.
		if p < 0 || int(p) >= i {
			d.parent[i] = -1
			continue
		}
		d.parent[i] = int32(p)
		if last[p] < 0 {
			d.first[p] = int32(i)
		} else {
			d.next[last[p]] = int32(i)
		}
		last[p] = int32(i)
	}
}

// indexLayout sets laid, live, hidden and ltext from the layout tree l
// (nil for none); indexTree comes first.
func (d *domDoc) indexLayout(l *domsnapshot.LayoutTreeSnapshot) {
	count := len(d.parent)
	d.laid, d.live, d.hidden = make([]int32, count), make([]bool, count), make([]bool, count)
	d.ltext = make([]string, count)
	for i := range d.laid {
		d.laid[i] = -1
	}
	if l != nil {
		for li, ni := range l.NodeIndex {
			if ni >= 0 && int(ni) < count {
				d.layoutObject(int32(ni), li, l)
			}
		}
	}
	// Children come after their parent: one pass from the end carries
	// live up to every ancestor.
	for i := count - 1; i > 0; i-- {
		if p := d.parent[i]; d.live[i] && p >= 0 {
			d.live[p] = true
		}
	}
}

// layoutObject records layout object li of l, which node ni has.
func (d *domDoc) layoutObject(ni int32, li int, l *domsnapshot.LayoutTreeSnapshot) {
	if d.laid[ni] < 0 {
		d.laid[ni] = int32(li)
	}
	d.live[ni] = true
	if li < len(l.Text) {
		d.ltext[ni] += d.s(l.Text[li])
	}
	if li < len(l.Styles) && len(l.Styles[li]) > 0 {
		switch d.s(domsnapshot.StringIndex(l.Styles[li][0])) {
		case "hidden", "collapse":
			d.hidden[ni] = true
		}
	}
}

// indexRare sets the sparse per-node data of n.
func (d *domDoc) indexRare(n *domsnapshot.NodeTreeSnapshot) {
	d.inputValue = d.rareStrings(n.InputValue)
	d.textValue = d.rareStrings(n.TextValue)
	d.pseudo = d.rareStrings(n.PseudoType)
	if n.OptionSelected != nil {
		d.selected = make(map[int32]bool, len(n.OptionSelected.Index))
		for _, i := range n.OptionSelected.Index {
			d.selected[int32(i)] = true
		}
	}
	if n.IsClickable != nil {
		d.clickable = make(map[int32]bool, len(n.IsClickable.Index))
		for _, i := range n.IsClickable.Index {
			d.clickable[int32(i)] = true
		}
	}
	if c := n.ContentDocumentIndex; c != nil {
		d.contentDoc = make(map[int32]int, len(c.Index))
		for k, i := range c.Index {
			if k < len(c.Value) {
				d.contentDoc[int32(i)] = int(c.Value[k])
			}
		}
	}
}

func (d *domDoc) rareStrings(r *domsnapshot.RareStringData) map[int32]string {
	if r == nil || len(r.Index) == 0 {
		return nil
	}
	m := make(map[int32]string, len(r.Index))
	for k, i := range r.Index {
		if k < len(r.Value) {
			m[int32(i)] = d.s(r.Value[k])
		}
	}
	return m
}

// s returns the string at index i of the answer's table ("" for -1 or an
// index out of range).
func (d *domDoc) s(i domsnapshot.StringIndex) string {
	if i < 0 || int(i) >= len(d.str) {
		return ""
	}
	return d.str[i]
}

func (d *domDoc) tag(i int32) string { return d.s(d.name[i]) }

// attr returns element i's attribute named name (HTML attribute names are
// lower case in the answer) and whether it is present.
func (d *domDoc) attr(i int32, name string) (string, bool) {
	if int(i) >= len(d.attrs) {
		return "", false
	}
	a := d.attrs[i]
	for k := 0; k+1 < len(a); k += 2 {
		if d.s(domsnapshot.StringIndex(a[k])) == name {
			return d.s(domsnapshot.StringIndex(a[k+1])), true
		}
	}
	return "", false
}

func (d *domDoc) byID(id string) (int32, bool) {
	if d.ids == nil {
		d.ids = map[string]int32{}
		for i := range d.typ {
			if d.typ[i] == 1 {
				if v, ok := d.attr(int32(i), "id"); ok && v != "" {
					if _, dup := d.ids[v]; !dup {
						d.ids[v] = int32(i)
					}
				}
			}
		}
	}
	i, ok := d.ids[id]
	return i, ok
}

// labelControl returns the control label element l labels: the element its
// for attribute names, else its first labelable descendant; -1 for none.
func (d *domDoc) labelControl(l int32) int32 {
	if id, ok := d.attr(l, "for"); ok {
		if e, ok := d.byID(id); ok && labelable(d, e) {
			return e
		}
		return -1
	}
	end := d.subtreeEnd(l)
	for e := l + 1; e < end; e++ {
		if d.typ[e] == 1 && labelable(d, e) {
			return e
		}
	}
	return -1
}

// subtreeEnd returns the index after node i's last descendant (the answer
// lists nodes depth first).
func (d *domDoc) subtreeEnd(i int32) int32 {
	for n := i; n >= 0; n = d.parent[n] {
		if d.next[n] >= 0 {
			return d.next[n]
		}
	}
	return int32(len(d.typ))
}

func labelable(d *domDoc, e int32) bool {
	switch d.tag(e) {
	case "INPUT":
		t, _ := d.attr(e, "type")
		return !strings.EqualFold(t, "hidden")
	case "BUTTON", "METER", "OUTPUT", "PROGRESS", "SELECT", "TEXTAREA":
		return true
	}
	return false
}

// labelsToggle reports whether label element l is folded into the checkbox
// or radio button it labels, as Chromium folds it: the control is shown,
// takes its name from the label (no aria-label or aria-labelledby of its
// own), and the label holds nothing but text besides the control.
func (d *domDoc) labelsToggle(l int32) bool {
	c := d.labelControl(l)
	if c < 0 || d.tag(c) != "INPUT" || !d.live[c] || d.hidden[c] {
		return false
	}
	t, _ := d.attr(c, "type")
	if !strings.EqualFold(t, "checkbox") && !strings.EqualFold(t, "radio") {
		return false
	}
	for _, a := range []string{"aria-label", "aria-labelledby"} {
		if v, ok := d.attr(c, a); ok && strings.TrimSpace(v) != "" {
			return false
		}
	}
	end := d.subtreeEnd(l)
	for e := l + 1; e < end; e++ {
		if e != c && d.typ[e] == 1 && d.live[e] {
			return false
		}
	}
	return true
}

// labelsFor returns the label elements whose for attribute is id.
func (d *domDoc) labelsFor(id string) []int32 {
	if d.labels == nil {
		d.labels = map[string][]int32{}
		for i := range d.typ {
			if d.typ[i] == 1 && d.tag(int32(i)) == "LABEL" {
				if v, ok := d.attr(int32(i), "for"); ok && v != "" {
					d.labels[v] = append(d.labels[v], int32(i))
				}
			}
		}
	}
	return d.labels[id]
}

// ariaHidden reports whether element i hides itself and its subtree with
// aria-hidden: any value but "", "false" and "undefined" (ASCII case
// ignored), except on <html> and <body>, where Chromium ignores it.
func (d *domDoc) ariaHidden(i int32, tag string) bool {
	v, ok := d.attr(i, "aria-hidden")
	if !ok || tag == "HTML" || tag == "BODY" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "undefined":
		return false
	}
	return true
}

// focusable reports whether element i takes focus by its tag or a
// tabindex: such an element keeps its role whatever role attribute says.
func (d *domDoc) focusable(i int32, tag string) bool {
	switch tag {
	case "BUTTON", "INPUT", "SELECT", "TEXTAREA":
		return true
	case "A", "AREA":
		_, ok := d.attr(i, "href")
		return ok
	}
	_, ok := d.attr(i, "tabindex")
	return ok
}

// svgTitle is the text of SVG element i's <title> child.
func (d *domDoc) svgTitle(i int32) string {
	for c := d.first[i]; c >= 0; c = d.next[c] {
		if d.typ[c] == 1 && d.tag(c) == "title" {
			return capName(collapseSpace(d.labelledByText(nil, c))) // a <title> is never rendered
		}
	}
	return ""
}

// childText is the text of element i's first child element named tag.
func (d *domDoc) childText(i int32, tag string) string {
	for c := d.first[i]; c >= 0; c = d.next[c] {
		if d.typ[c] == 1 && d.tag(c) == tag {
			return d.text(c)
		}
	}
	return ""
}

// labelledByText appends the text of element e as aria-labelledby reads it:
// its aria-label if it has one, else its content, hidden or not (ARIA lets
// a label be hidden); form controls in it are left out.
func (d *domDoc) labelledByText(b []byte, e int32) []byte {
	if d.typ[e] == 1 {
		if v, ok := d.attr(e, "aria-label"); ok && strings.TrimSpace(v) != "" {
			return append(b, v...)
		}
	}
	return d.appendText(b, e, 0, true)
}

// text is the rendered text of node i's subtree, whitespace collapsed, at
// most maxName bytes: the text nodes that are rendered (as rendered), an
// image's alt, an SVG's title, a nested element's aria-label in place of its
// content, ::before and ::after content in its place; a block-level element
// is set apart by a space; form controls and hidden subtrees are left out.
func (d *domDoc) text(i int32) string {
	return capName(collapseSpace(d.appendText(nil, i, 0, false)))
}

// appendText appends node i's text (see text); all also reads what is not
// rendered (for aria-labelledby).
func (d *domDoc) appendText(b []byte, i int32, depth int, all bool) []byte {
	if depth > maxTextDepth || len(b) >= 2*maxName {
		return b
	}
	switch d.typ[i] {
	case 3:
		switch {
		case d.laid[i] >= 0 && !d.hidden[i]:
			b = append(b, d.shownText(i)...)
		case all:
			b = append(b, d.s(d.value[i])...)
		}
		return b
	case 1:
		return d.appendElementText(b, i, depth, all)
	}
	return b
}

// appendElementText appends element i's text: nothing for a script, a
// style or a control (a control's value may be a password's), a space for
// a line break, a nested element's aria-label in place of its content, an
// image's alt, an SVG's title, a generated box's text, else its children's
// text, a block set apart by spaces.
func (d *domDoc) appendElementText(b []byte, i int32, depth int, all bool) []byte {
	tag := d.tag(i)
	if !all && (!d.live[i] || d.ariaHidden(i, tag)) {
		return b
	}
	shown := all || !d.hidden[i]
	switch tag {
	case "SCRIPT", "STYLE":
		return b
	case "BR":
		return append(b, ' ')
	}
	if depth > 0 && shown {
		if v, ok := d.attr(i, "aria-label"); ok && strings.TrimSpace(v) != "" {
			return spaced(b, v)
		}
	}
	switch tag {
	case "INPUT", "SELECT", "TEXTAREA":
		return b
	case "IMG":
		v, _ := d.attr(i, "alt")
		return spacedIf(shown, b, v)
	case "svg":
		return spacedIf(shown, b, d.svgTitle(i))
	}
	if p, ok := d.pseudo[i]; ok {
		if shown && (p == "before" || p == "after") {
			b = append(b, d.ltext[i]...)
		}
		return b
	}
	block := blockTag(tag)
	if block {
		b = append(b, ' ')
	}
	d.eachChild(i, func(c int32) { b = d.appendText(b, c, depth+1, all) })
	if block {
		b = append(b, ' ')
	}
	return b
}

// spaced appends s to b between spaces.
func spaced(b []byte, s string) []byte { return append(append(append(b, ' '), s...), ' ') }

// spacedIf appends s to b between spaces when cond holds.
func spacedIf(cond bool, b []byte, s string) []byte {
	if !cond {
		return b
	}
	return spaced(b, s)
}

// eachChild calls f with each child of node i in rendering order: a
// ::before box and the DOM children in order, then the ::after box (the
// answer lists every generated box first).
func (d *domDoc) eachChild(i int32, f func(int32)) {
	after := int32(-1)
	for c := d.first[i]; c >= 0; c = d.next[c] {
		if d.pseudo[c] == "after" {
			after = c
			continue
		}
		f(c)
	}
	if after >= 0 {
		f(after)
	}
}

func blockTag(tag string) bool {
	switch tag {
	case "DIV", "P", "LI", "UL", "OL", "TR", "TD", "TH", "TABLE", "H1", "H2", "H3", "H4", "H5", "H6",
		"SECTION", "ARTICLE", "HEADER", "FOOTER", "NAV", "MAIN", "ASIDE", "FORM", "FIELDSET", "DL", "DT", "DD",
		"BLOCKQUOTE", "FIGURE", "FIGCAPTION", "PRE", "HR", "LABEL":
		return true
	}
	return false
}

// shownText is text node i's text as rendered, or its DOM text when the
// answer gives none for its layout object.
func (d *domDoc) shownText(i int32) string {
	if t := d.ltext[i]; t != "" {
		return t
	}
	return d.s(d.value[i])
}

// editable reports whether element i is a contenteditable host.
func (d *domDoc) editable(i int32) bool {
	v, ok := d.attr(i, "contenteditable")
	return ok && !strings.EqualFold(strings.TrimSpace(v), "false")
}

// valueOf is what Chromium shows as element i's value: a text field's
// current text (a password field's as one bullet per character, as Chromium
// masks it; an editable element's rendered text), the chosen option of a
// drop-down, a range's, progress bar's or meter's value; for an ARIA
// widget, aria-valuenow (slider, spin button, progress bar, meter) or its
// text (textbox, combobox).
func (d *domDoc) valueOf(i int32, tag, role string) string {
	switch role {
	case "textbox", "searchbox", "combobox", "Date", "InputTime", "DateTime", "ColorWell":
	case "spinbutton", "slider", "scrollbar", "progressbar", "meter":
		if v, ok := d.attr(i, "aria-valuenow"); ok {
			return v
		}
		switch tag {
		case "PROGRESS", "METER":
			v, _ := d.attr(i, "value")
			return v
		case "INPUT":
		default:
			return ""
		}
	default:
		if d.editable(i) {
			return d.text(i)
		}
		return ""
	}
	switch tag {
	case "INPUT":
		v := d.inputValue[i]
		if t, _ := d.attr(i, "type"); strings.EqualFold(t, "password") {
			return strings.Repeat("•", utf8.RuneCountInString(v))
		}
		return v
	case "TEXTAREA":
		if v, ok := d.textValue[i]; ok {
			return v
		}
		return d.inputValue[i]
	case "SELECT":
		first := int32(-1)
		for _, o := range d.options(i) {
			if first < 0 {
				first = o
			}
			if d.selected[o] {
				return d.optionText(o)
			}
		}
		if first >= 0 && role == "combobox" {
			return d.optionText(first)
		}
		return ""
	}
	if d.editable(i) || role == "textbox" || role == "searchbox" || role == "combobox" {
		return d.text(i) // an ARIA widget's value is its text
	}
	return ""
}

// textOnly reports whether element i holds text and no element.
func (d *domDoc) textOnly(i int32) bool {
	for c := d.first[i]; c >= 0; c = d.next[c] {
		if d.typ[c] == 1 && d.live[c] {
			return false
		}
	}
	return true
}

// options returns select element i's options, those in its groups included.
func (d *domDoc) options(i int32) []int32 {
	var out []int32
	for c := d.first[i]; c >= 0; c = d.next[c] {
		switch d.tag(c) {
		case "OPTION":
			out = append(out, c)
		case "OPTGROUP":
			for o := d.first[c]; o >= 0; o = d.next[o] {
				if d.tag(o) == "OPTION" {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// optionText is an option's label: its label attribute, else its text
// (an option of a drop-down has no layout object, so its text nodes are
// read as they are).
func (d *domDoc) optionText(o int32) string {
	if v, ok := d.attr(o, "label"); ok && v != "" {
		return collapseString(v)
	}
	var b []byte
	for c := d.first[o]; c >= 0; c = d.next[c] {
		if d.typ[c] == 3 {
			b = append(b, d.s(d.value[c])...)
		}
	}
	return collapseSpace(b)
}

func collapseString(s string) string { return collapseSpace([]byte(s)) }
