package tools

import (
	"strings"
	"unicode/utf8"
)

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

// roleRule is the role HTML gives an element by its tag: role, or, when of
// is set, what of returns for the element (the role then depends on its
// attributes or its place).
type roleRule struct {
	role string
	of   func(d *domDoc, i int32) string
}

// tagRoles maps a tag (as the answer spells it: upper case for HTML, as
// written for SVG) to its role; a tag not in it is "generic".
var tagRoles = map[string]roleRule{
	"A": {of: linkRole}, "AREA": {of: linkRole},
	"ABBR": {role: "Abbr"}, "ADDRESS": {role: "group"}, "ARTICLE": {role: "article"},
	"ASIDE": {role: "complementary"}, "BLOCKQUOTE": {role: "blockquote"}, "BUTTON": {role: "button"},
	"CAPTION": {role: "caption"}, "CODE": {role: "code"}, "DD": {role: "definition"},
	"DEL": {role: "deletion"}, "S": {role: "deletion"}, "STRIKE": {role: "deletion"},
	"DETAILS": {role: "group"}, "DIALOG": {role: "dialog"}, "DL": {role: "DescriptionList"},
	"DT": {role: "term"}, "EM": {role: "emphasis"}, "FIELDSET": {role: "group"},
	"FIGCAPTION": {role: "Figcaption"}, "FIGURE": {role: "figure"},
	"FOOTER": {of: pageLandmark("contentinfo")}, "HEADER": {of: pageLandmark("banner")},
	"FORM": {role: "form"},
	"H1":   {role: "heading"}, "H2": {role: "heading"}, "H3": {role: "heading"},
	"H4": {role: "heading"}, "H5": {role: "heading"}, "H6": {role: "heading"},
	"HR": {role: "separator"}, "IFRAME": {role: "Iframe"}, "IMG": {role: "image"},
	"INPUT": {of: inputRole}, "INS": {role: "insertion"}, "LABEL": {role: "LabelText"},
	"LEGEND": {role: "Legend"}, "LI": {role: "listitem"}, "MAIN": {role: "main"}, "MARK": {role: "mark"},
	"MENU": {role: "list"}, "OL": {role: "list"}, "UL": {role: "list"},
	"METER": {role: "meter"}, "NAV": {role: "navigation"}, "OPTION": {role: "option"},
	"OUTPUT": {role: "status"}, "P": {role: "paragraph"}, "PROGRESS": {role: "progressbar"},
	"SEARCH": {role: "search"}, "SECTION": {of: sectionRole}, "SELECT": {of: selectRole},
	"STRONG": {role: "strong"}, "SUB": {role: "subscript"}, "SUP": {role: "superscript"},
	"SUMMARY": {role: "DisclosureTriangle"}, "TABLE": {role: "table"},
	"THEAD": {of: tablePart("rowgroup")}, "TFOOT": {of: tablePart("rowgroup")},
	"TBODY": {of: tablePart("generic")}, "TR": {of: tablePart("row")}, "TD": {of: tablePart("cell")},
	"TH":       {of: headerCellRole},
	"TEXTAREA": {role: "textbox"}, "TIME": {role: "time"}, "svg": {role: "image"},
}

// inputRoles maps an input's type (lower case) to its role; "search" and a
// type not in it are decided by inputRole.
var inputRoles = map[string]string{
	"hidden": "", "number": "spinbutton", "range": "slider", "checkbox": "checkbox", "radio": "radio",
	"submit": "button", "reset": "button", "button": "button", "image": "button", "file": "button",
	"color": "ColorWell", "date": "Date", "time": "InputTime",
	"datetime-local": "DateTime", "month": "DateTime", "week": "DateTime",
}

// role returns element i's role in Chromium's vocabulary: "generic" for an
// element HTML gives no role (rendered only when it has a name), "" for one
// that is not rendered itself (role none or presentation, a hidden input, a
// link without href …; its children still are).
func (d *domDoc) role(i int32, tag string) string {
	if role, ok := d.explicitRole(i, tag); ok {
		return role
	}
	r, ok := tagRoles[tag]
	switch {
	case !ok:
		return "generic"
	case r.of != nil:
		return r.of(d, i)
	}
	return r.role
}

// explicitRole is the role element i's role attribute gives, from its first
// token that names an ARIA role; false when the attribute gives none, or
// names none or presentation on a focusable element (which keeps its own).
// A region without a name of its own is "generic".
func (d *domDoc) explicitRole(i int32, tag string) (string, bool) {
	r, ok := d.attr(i, "role")
	if !ok {
		return "", false
	}
	for _, tok := range strings.Fields(strings.ToLower(r)) {
		role, ok := ariaRoles[tok]
		switch {
		case !ok:
			continue
		case role == "none" && d.focusable(i, tag):
			return "", false
		case role == "none":
			return "", true
		case role == "region" && !d.hasOwnName(i):
			return "generic", true
		}
		return role, true
	}
	return "", false
}

// linkRole: an a or area element is a link when it has an href.
func linkRole(d *domDoc, i int32) string {
	if _, ok := d.attr(i, "href"); ok {
		return "link"
	}
	return "generic"
}

// pageLandmark gives a header or footer role unless the element is inside
// sectioning content, where it is "generic".
func pageLandmark(role string) func(d *domDoc, i int32) string {
	return func(d *domDoc, i int32) string {
		if d.inSectioning(i) {
			return "generic"
		}
		return role
	}
}

// sectionRole: a section is a region when it has a name of its own.
func sectionRole(d *domDoc, i int32) string {
	if d.hasOwnName(i) {
		return "region"
	}
	return "generic"
}

// selectRole: a select showing more than one row is a listbox, else a
// combobox.
func selectRole(d *domDoc, i int32) string {
	if _, multi := d.attr(i, "multiple"); multi {
		return "listbox"
	}
	if s, _ := d.attr(i, "size"); s != "" && s != "0" && s != "1" {
		return "listbox"
	}
	return "combobox"
}

// tablePart gives a table part role, "" in a presentational table.
func tablePart(role string) func(d *domDoc, i int32) string {
	return func(d *domDoc, i int32) string {
		if d.inPresentationalTable(i) {
			return ""
		}
		return role
	}
}

// headerCellRole: a th is a rowheader with scope="row", else a
// columnheader; "" in a presentational table.
func headerCellRole(d *domDoc, i int32) string {
	if d.inPresentationalTable(i) {
		return ""
	}
	if s, _ := d.attr(i, "scope"); strings.EqualFold(s, "row") {
		return "rowheader"
	}
	return "columnheader"
}

// inputRole is an input's role by its type (inputRoles); a search field or
// a text field with a list attribute is a combobox.
func inputRole(d *domDoc, i int32) string {
	t, _ := d.attr(i, "type")
	t = strings.ToLower(t)
	_, list := d.attr(i, "list")
	if t == "search" && !list {
		return "searchbox"
	}
	if r, ok := inputRoles[t]; ok {
		return r
	}
	if list {
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

// nameSource is one step of the accessible name computation: element i's
// name from that source, whitespace collapsed, at most maxName bytes; ""
// when the source gives none.
type nameSource func(d *domDoc, i int32, tag, role string) string

// nameSources are the steps of the accessible name computation Chromium
// applies to HTML, in order: the first that gives a name names the element.
var nameSources = []nameSource{
	labelledByName,
	attrName("aria-label"),
	markupName,
	contentName,
	attrName("title"),
	placeholderName,
}

// accName returns element i's accessible name (nameSources): whitespace
// collapsed, at most maxName bytes, "" for none.
func (d *domDoc) accName(i int32, tag, role string) string {
	for _, src := range nameSources {
		if n := src(d, i, tag, role); n != "" {
			return n
		}
	}
	return ""
}

// labelledByName is the text of the elements aria-labelledby names, each
// id read once, in the attribute's order.
func labelledByName(d *domDoc, i int32, _, _ string) string {
	v, ok := d.attr(i, "aria-labelledby")
	if !ok {
		return ""
	}
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
	return capName(collapseSpace(b))
}

// attrName names an element by its attribute attr.
func attrName(attr string) nameSource {
	return func(d *domDoc, i int32, _, _ string) string {
		v, _ := d.attr(i, attr)
		return capName(collapseString(v))
	}
}

// markupName is the name HTML gives the element by its own markup
// (nativeName).
func markupName(d *domDoc, i int32, tag, _ string) string {
	return capName(d.nativeName(i, tag))
}

// contentName is the element's text, for the roles named by their content.
func contentName(d *domDoc, i int32, _, role string) string {
	if !nameFromContent[role] {
		return ""
	}
	return d.text(i)
}

// placeholderName is a text field's placeholder, else its
// aria-placeholder.
func placeholderName(d *domDoc, i int32, _, role string) string {
	if role != "textbox" && role != "searchbox" && role != "combobox" {
		return ""
	}
	for _, a := range []string{"placeholder", "aria-placeholder"} {
		if v, ok := d.attr(i, a); ok && strings.TrimSpace(v) != "" {
			return capName(collapseString(v))
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

// nativeName is the name HTML gives element i by its own markup: a form
// control's labels (else an input button's value or default label), an
// image's alt, a fieldset's legend, a table's caption, a frame's title, an
// SVG's <title>.
func (d *domDoc) nativeName(i int32, tag string) string {
	switch tag {
	case "INPUT", "TEXTAREA", "SELECT", "METER", "PROGRESS", "BUTTON", "OUTPUT":
		if n := d.labelName(i); n != "" {
			return n
		}
		if tag == "INPUT" {
			return d.inputButtonName(i)
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

// labelName is the text of form control i's labels: those whose for
// attribute names its id, else the label element it is in (one without a
// for attribute, labelling it), joined by spaces.
func (d *domDoc) labelName(i int32) string {
	var parts []string
	if id, ok := d.attr(i, "id"); ok && id != "" {
		for _, l := range d.labelsFor(id) {
			if t := d.text(l); t != "" {
				parts = append(parts, t)
			}
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, " ")
	}
	for p := d.parent[i]; p >= 0; p = d.parent[p] {
		if d.tag(p) != "LABEL" {
			continue
		}
		if _, hasFor := d.attr(p, "for"); !hasFor && d.labelControl(p) == i {
			return d.text(p)
		}
		break
	}
	return ""
}

// defaultButtonNames are the labels Chromium gives an input button without
// a value, by type.
var defaultButtonNames = map[string]string{"submit": "Submit", "reset": "Reset"}

// inputButtonName is the name of input i as a button: a submit, reset or
// button input's value attribute (else its default label), an image
// input's alt (else "Submit"); "" for any other input.
func (d *domDoc) inputButtonName(i int32) string {
	t, _ := d.attr(i, "type")
	t = strings.ToLower(t)
	switch t {
	case "submit", "reset", "button":
		if v, ok := d.attr(i, "value"); ok {
			return collapseString(v)
		}
		return defaultButtonNames[t]
	case "image":
		if v, ok := d.attr(i, "alt"); ok {
			return collapseString(v)
		}
		return "Submit"
	}
	return ""
}
