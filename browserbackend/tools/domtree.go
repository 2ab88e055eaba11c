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
	contentDoc map[int32]int
	pseudo     map[int32]string
	// ids maps an id attribute to its element, labels a label's for
	// attribute to its labels; both built on first use.
	ids    map[string]int32
	labels map[string][]int32
}

// newDOMDocs indexes every document of res.
func newDOMDocs(res *domsnapshot.CaptureSnapshotResult) []*domDoc {
	docs := make([]*domDoc, 0, len(res.Documents))
	for _, d := range res.Documents {
		docs = append(docs, newDOMDoc(res.Strings, d))
	}
	return docs
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
	doc.first, doc.next, doc.parent = make([]int32, count), make([]int32, count), make([]int32, count)
	doc.laid, doc.live, doc.hidden = make([]int32, count), make([]bool, count), make([]bool, count)
	doc.ltext = make([]string, count)
	last := make([]int32, count)
	for i := range count {
		doc.first[i], doc.next[i], doc.laid[i], last[i] = -1, -1, -1, -1
	}
	// Every column is cut to the node count, so that no loop over one of
	// them indexes past another.
	doc.typ, doc.name, doc.value, doc.backend = doc.typ[:count], doc.name[:count], doc.value[:count], doc.backend[:count]
	if len(doc.attrs) > count {
		doc.attrs = doc.attrs[:count]
	}
	for i, p := range n.ParentIndex {
		// A parent comes before its children; any other index is dropped, so
		// every walk up the tree ends.
		if p < 0 || int(p) >= i {
			doc.parent[i] = -1
			continue
		}
		doc.parent[i] = int32(p)
		if last[p] < 0 {
			doc.first[p] = int32(i)
		} else {
			doc.next[last[p]] = int32(i)
		}
		last[p] = int32(i)
	}
	if l := d.Layout; l != nil {
		for li, ni := range l.NodeIndex {
			if ni < 0 || int(ni) >= count {
				continue
			}
			if doc.laid[ni] < 0 {
				doc.laid[ni] = int32(li)
			}
			doc.live[ni] = true
			if li < len(l.Text) {
				doc.ltext[ni] += doc.s(l.Text[li])
			}
			if li < len(l.Styles) && len(l.Styles[li]) > 0 {
				switch doc.s(domsnapshot.StringIndex(l.Styles[li][0])) {
				case "hidden", "collapse":
					doc.hidden[ni] = true
				}
			}
		}
	}
	// Children come after their parent: one pass from the end carries
	// live up to every ancestor.
	for i := count - 1; i > 0; i-- {
		if p := doc.parent[i]; doc.live[i] && p >= 0 {
			doc.live[p] = true
		}
	}
	doc.inputValue = doc.rareStrings(n.InputValue)
	doc.textValue = doc.rareStrings(n.TextValue)
	doc.pseudo = doc.rareStrings(n.PseudoType)
	if n.OptionSelected != nil {
		doc.selected = make(map[int32]bool, len(n.OptionSelected.Index))
		for _, i := range n.OptionSelected.Index {
			doc.selected[int32(i)] = true
		}
	}
	if c := n.ContentDocumentIndex; c != nil {
		doc.contentDoc = make(map[int32]int, len(c.Index))
		for k, i := range c.Index {
			if k < len(c.Value) {
				doc.contentDoc[int32(i)] = int(c.Value[k])
			}
		}
	}
	return doc
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

// ariaRoles are the ARIA roles a role attribute may name, each with the
// name Chromium's accessibility tree gives it.
var ariaRoles = func() map[string]string {
	m := map[string]string{"img": "image", "image": "image", "none": "none", "presentation": "none"}
	for _, r := range strings.Fields(`alert alertdialog application article banner blockquote button caption cell
checkbox code columnheader combobox complementary contentinfo definition deletion dialog directory document
emphasis feed figure form generic grid gridcell group heading insertion link list listbox listitem log main
marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation note option paragraph
progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider
spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time timer
toolbar tooltip tree treegrid treeitem`) {
		m[r] = r
	}
	return m
}()

// nameFromContent are the roles whose name, when nothing else gives one, is
// the text of their subtree (WAI-ARIA 1.2 §5.2.8.4, as Chromium applies it).
var nameFromContent = map[string]bool{
	"button": true, "link": true, "heading": true, "cell": true, "gridcell": true, "columnheader": true,
	"rowheader": true, "checkbox": true, "radio": true, "switch": true, "tab": true, "menuitem": true,
	"menuitemcheckbox": true, "menuitemradio": true, "option": true, "treeitem": true, "tooltip": true,
	"term": true, "DisclosureTriangle": true,
}

// leafRoles are rendered without their subtree.
var leafRoles = map[string]bool{
	"textbox": true, "searchbox": true, "spinbutton": true, "slider": true,
	"progressbar": true, "meter": true, "separator": true,
}

// role returns element i's role in Chromium's vocabulary: "generic" for an
// element HTML gives no role (rendered only when it has a name), "" for one
// that is not rendered itself (role none or presentation, a hidden input, a
// link without href …; its children still are).
func (d *domDoc) role(i int32, tag string) string {
	if r, ok := d.attr(i, "role"); ok {
		for _, tok := range strings.Fields(strings.ToLower(r)) {
			if role, ok := ariaRoles[tok]; ok {
				switch {
				case role == "none" && d.focusable(i, tag):
					// a focusable element keeps its own role
				case role == "none":
					return ""
				case role == "region" && !d.hasOwnName(i):
					return "generic"
				default:
					return role
				}
				break
			}
		}
	}
	switch tag {
	case "A", "AREA":
		if _, ok := d.attr(i, "href"); ok {
			return "link"
		}
		return "generic"
	case "ARTICLE":
		return "article"
	case "ASIDE":
		return "complementary"
	case "BLOCKQUOTE":
		return "blockquote"
	case "BUTTON":
		return "button"
	case "CAPTION":
		return "caption"
	case "CODE":
		return "code"
	case "DD":
		return "definition"
	case "DT":
		return "term"
	case "DEL", "S", "STRIKE":
		return "deletion"
	case "ADDRESS":
		return "group"
	case "ABBR":
		return "Abbr"
	case "INS":
		return "insertion"
	case "DETAILS", "FIELDSET":
		return "group"
	case "DIALOG":
		return "dialog"
	case "DL":
		return "DescriptionList"
	case "EM":
		return "emphasis"
	case "FIGCAPTION":
		return "Figcaption"
	case "FIGURE":
		return "figure"
	case "FOOTER":
		if !d.inSectioning(i) {
			return "contentinfo"
		}
		return "generic"
	case "HEADER":
		if !d.inSectioning(i) {
			return "banner"
		}
		return "generic"
	case "FORM":
		return "form"
	case "H1", "H2", "H3", "H4", "H5", "H6":
		return "heading"
	case "HR":
		return "separator"
	case "IFRAME":
		return "Iframe"
	case "IMG":
		return "image"
	case "INPUT":
		return d.inputRole(i)
	case "LABEL":
		return "LabelText"
	case "LEGEND":
		return "Legend"
	case "LI":
		return "listitem"
	case "MAIN":
		return "main"
	case "MARK":
		return "mark"
	case "MENU", "OL", "UL":
		return "list"
	case "METER":
		return "meter"
	case "NAV":
		return "navigation"
	case "OPTION":
		return "option"
	case "OUTPUT":
		return "status"
	case "P":
		return "paragraph"
	case "PROGRESS":
		return "progressbar"
	case "SEARCH":
		return "search"
	case "SECTION":
		if d.hasOwnName(i) {
			return "region"
		}
		return "generic"
	case "SELECT":
		if _, multi := d.attr(i, "multiple"); multi {
			return "listbox"
		}
		if s, _ := d.attr(i, "size"); s != "" && s != "0" && s != "1" {
			return "listbox"
		}
		return "combobox"
	case "STRONG":
		return "strong"
	case "SUB":
		return "subscript"
	case "SUP":
		return "superscript"
	case "SUMMARY":
		return "DisclosureTriangle"
	case "TABLE":
		return "table"
	case "THEAD", "TFOOT", "TBODY", "TR", "TD", "TH":
		if d.inPresentationalTable(i) {
			return ""
		}
	}
	switch tag {
	case "THEAD", "TFOOT":
		return "rowgroup"
	case "TR":
		return "row"
	case "TD":
		return "cell"
	case "TH":
		if s, _ := d.attr(i, "scope"); strings.EqualFold(s, "row") {
			return "rowheader"
		}
		return "columnheader"
	case "TEXTAREA":
		return "textbox"
	case "TIME":
		return "time"
	case "svg":
		return "image"
	}
	return "generic"
}

func (d *domDoc) inputRole(i int32) string {
	t, _ := d.attr(i, "type")
	switch strings.ToLower(t) {
	case "hidden":
		return ""
	case "search":
		if _, ok := d.attr(i, "list"); !ok {
			return "searchbox"
		}
		return "combobox"
	case "number":
		return "spinbutton"
	case "range":
		return "slider"
	case "checkbox":
		return "checkbox"
	case "radio":
		return "radio"
	case "submit", "reset", "button", "image", "file":
		return "button"
	case "color":
		return "ColorWell"
	case "date":
		return "Date"
	case "time":
		return "InputTime"
	case "datetime-local", "month", "week":
		return "DateTime"
	}
	if _, ok := d.attr(i, "list"); ok {
		return "combobox"
	}
	return "textbox"
}

// inPresentationalTable reports whether table part i is in a table whose
// role is none or presentation: its rows and cells are presentational too.
func (d *domDoc) inPresentationalTable(i int32) bool {
	for p := d.parent[i]; p >= 0; p = d.parent[p] {
		if d.tag(p) == "TABLE" {
			r, _ := d.attr(p, "role")
			switch strings.ToLower(strings.TrimSpace(r)) {
			case "none", "presentation":
				return !d.focusable(p, "TABLE")
			}
			return false
		}
	}
	return false
}

// inSectioning reports whether element i is inside an article, aside, main,
// nav or section: a header or footer there is not the page's landmark.
func (d *domDoc) inSectioning(i int32) bool {
	for p := d.parent[i]; p >= 0; p = d.parent[p] {
		switch d.tag(p) {
		case "ARTICLE", "ASIDE", "MAIN", "NAV", "SECTION":
			return true
		}
	}
	return false
}

// hasOwnName reports whether element i is named by an attribute.
func (d *domDoc) hasOwnName(i int32) bool {
	for _, a := range []string{"aria-label", "aria-labelledby", "title"} {
		if v, ok := d.attr(i, a); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// maxName is the longest name rendered, in bytes (Chromium cuts string
// attributes of its accessibility tree at 10,000 characters).
const maxName = 10000

// maxTextDepth bounds the levels a name is gathered from.
const maxTextDepth = 256

// accName returns element i's accessible name, following the steps of the
// accessible name computation Chromium applies to HTML: aria-labelledby,
// aria-label, the element's own naming (labels, alt, value, legend, caption,
// title of a frame or an SVG), its content for the roles named by it, then
// title and placeholder. Whitespace is collapsed; at most maxName bytes.
func (d *domDoc) accName(i int32, tag, role string) string {
	if v, ok := d.attr(i, "aria-labelledby"); ok {
		var b []byte
		seen := map[string]bool{}
		for _, id := range strings.Fields(v) {
			if seen[id] || len(b) >= maxName {
				continue
			}
			seen[id] = true
			if e, ok := d.byID(id); ok {
				b = d.labelledByText(append(b, ' '), e)
			}
		}
		if n := capName(collapseSpace(b)); n != "" {
			return n
		}
	}
	if v, ok := d.attr(i, "aria-label"); ok {
		if v = capName(collapseString(v)); v != "" {
			return v
		}
	}
	if n := d.nativeName(i, tag); n != "" {
		return capName(n)
	}
	if nameFromContent[role] {
		if n := d.text(i); n != "" {
			return n
		}
	}
	if v, ok := d.attr(i, "title"); ok {
		if v = capName(collapseString(v)); v != "" {
			return v
		}
	}
	if role == "textbox" || role == "searchbox" || role == "combobox" {
		for _, a := range []string{"placeholder", "aria-placeholder"} {
			if v, ok := d.attr(i, a); ok && strings.TrimSpace(v) != "" {
				return capName(collapseString(v))
			}
		}
	}
	return ""
}

// capName cuts s to at most maxName bytes, at a character boundary.
func capName(s string) string {
	if len(s) <= maxName {
		return s
	}
	n := maxName
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// nativeName is the name HTML gives element i by its own markup.
func (d *domDoc) nativeName(i int32, tag string) string {
	switch tag {
	case "INPUT", "TEXTAREA", "SELECT", "METER", "PROGRESS", "BUTTON", "OUTPUT":
		t, _ := d.attr(i, "type")
		t = strings.ToLower(t)
		var parts []string
		if id, ok := d.attr(i, "id"); ok && id != "" {
			for _, l := range d.labelsFor(id) {
				if t := d.text(l); t != "" {
					parts = append(parts, t)
				}
			}
		}
		if len(parts) == 0 {
			for p := d.parent[i]; p >= 0; p = d.parent[p] {
				if d.tag(p) == "LABEL" {
					if _, hasFor := d.attr(p, "for"); !hasFor && d.labelControl(p) == i {
						if t := d.text(p); t != "" {
							parts = append(parts, t)
						}
					}
					break
				}
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " ")
		}
		if tag == "INPUT" {
			switch t {
			case "submit", "reset", "button":
				if v, ok := d.attr(i, "value"); ok {
					return collapseString(v)
				}
				switch t {
				case "submit":
					return "Submit"
				case "reset":
					return "Reset"
				}
			case "image":
				if v, ok := d.attr(i, "alt"); ok {
					return collapseString(v)
				}
				return "Submit"
			}
		}
		return ""
	case "IMG", "AREA":
		v, _ := d.attr(i, "alt")
		return collapseString(v)
	case "FIELDSET":
		return d.childText(i, "LEGEND")
	case "TABLE":
		return d.childText(i, "CAPTION")
	case "IFRAME":
		v, _ := d.attr(i, "title")
		return collapseString(v)
	case "svg":
		return d.svgTitle(i)
	}
	return ""
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
	default:
		return b
	}
	tag := d.tag(i)
	if !all && (!d.live[i] || d.ariaHidden(i, tag)) {
		return b
	}
	shown := all || !d.hidden[i]
	switch tag {
	case "INPUT", "SELECT", "TEXTAREA":
		// A control adds its aria-label, never its value (a password's).
		if v, ok := d.attr(i, "aria-label"); ok && depth > 0 && shown && strings.TrimSpace(v) != "" {
			b = append(append(append(b, ' '), v...), ' ')
		}
		return b
	case "SCRIPT", "STYLE":
		return b
	case "BR":
		return append(b, ' ')
	}
	if depth > 0 && shown {
		if v, ok := d.attr(i, "aria-label"); ok && strings.TrimSpace(v) != "" {
			return append(append(append(b, ' '), v...), ' ')
		}
	}
	switch tag {
	case "IMG":
		if shown {
			v, _ := d.attr(i, "alt")
			b = append(append(append(b, ' '), v...), ' ')
		}
		return b
	case "svg":
		if shown {
			b = append(append(append(b, ' '), d.svgTitle(i)...), ' ')
		}
		return b
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
