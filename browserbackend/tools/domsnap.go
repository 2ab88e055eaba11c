package tools

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/domsnapshot"
)

// notRead is the reason given for a cross-site frame that was not read,
// followed by why.
const notRead = "a cross-site frame runs in a process of its own; its content was not read: "

// snapshotDOM renders the page from one DOMSnapshot.captureSnapshot
// (SnapshotSourceDOM), with RoleClickable lines when clickable.
func (p *Page) snapshotDOM(ctx context.Context, op string, max int, clickable bool) (SnapshotResult, error) {
	var res SnapshotResult
	var snap domsnapshot.CaptureSnapshotResult
	err := p.s.Call(ctx, domsnapshot.CommandCaptureSnapshot, domsnapshot.CaptureSnapshotParams{ComputedStyles: domStyles}, &snap)
	if err != nil {
		if ctx.Err() != nil {
			return res, &Error{Op: op, Code: CodeTimeout, Message: "deadline passed while reading the page", Err: ctx.Err()}
		}
		return res, wrap(op, err)
	}
	docs := newDOMDocs(&snap)
	if len(docs) == 0 || len(docs[0].first) == 0 {
		return res, &Error{Op: op, Code: CodeBackend, Message: "DOMSnapshot.captureSnapshot answered without the page's document"}
	}
	res.URL, res.Title = docs[0].url, docs[0].title
	cross := crossReader{p: p}
	defer cross.close()
	docs = cross.read(ctx, p.s, docs, 0, 0)
	if ctx.Err() != nil {
		return res, &Error{Op: op, Code: CodeTimeout, Message: "deadline passed while reading frames", Err: ctx.Err()}
	}
	r := &domRenderer{docs: docs, placed: make([]bool, len(docs)), clickable: clickable, cross: cross.frames}
	r.max = max
	total := 0
	for _, d := range docs {
		total += len(d.typ)
	}
	r.grow(total / 2)
	r.renderDoc(0, 0, "")
	r.finish()
	r.result(&res)
	res.SkippedFrames = r.skipped
	return res, nil
}

// domRenderer renders the documents of a DOM snapshot, each child document
// under its iframe.
type domRenderer struct {
	snapLines
	docs    []*domDoc
	placed  []bool
	tooDeep bool
	// clickable: show the elements of RoleClickable.
	clickable bool
	// cross holds the cross-site frames, by their iframe element.
	cross map[ownerAt]crossFrame
	// skipped lists the frames the answer does not hold, with the reason.
	skipped []string
}

func (r *domRenderer) renderDoc(di, depth int, frame string) {
	r.placed[di] = true
	d := r.docs[di]
	if len(d.first) == 0 {
		return
	}
	for c := d.first[0]; c >= 0; c = d.next[c] {
		r.visit(d, c, depth, "", frame, 0)
	}
}

// maxDOMDepth bounds the levels of a document the walk descends (Blink's
// HTML parser nests at most 512; a script can nest deeper).
const maxDOMDepth = 1024

// visit renders node i at depth, level levels below its document's root;
// parentName is the name of the element it is in, which a text node
// repeating it does not add to.
func (r *domRenderer) visit(d *domDoc, i int32, depth int, parentName, frame string, level int) {
	if r.truncated {
		return
	}
	if level > maxDOMDepth {
		if !r.tooDeep {
			r.tooDeep = true
			r.line(SnapshotNode{Role: "StaticText", Name: fmt.Sprintf("[content nested deeper than %d levels is not shown]", maxDOMDepth), Depth: depth, Frame: frame})
		}
		return
	}
	switch d.typ[i] {
	case 3:
		if d.laid[i] < 0 || d.hidden[i] {
			return
		}
		if t := capName(collapseString(d.shownText(i))); t != "" && t != parentName {
			r.line(SnapshotNode{Role: "StaticText", Name: t, Depth: depth, Frame: frame})
		}
	case 1:
		r.visitElement(d, i, depth, frame, level)
	}
}

// unrendered are the elements the snapshot leaves out with their subtree.
var unrendered = map[string]bool{
	"SCRIPT": true, "STYLE": true, "TEMPLATE": true, "NOSCRIPT": true, "HEAD": true, "BR": true, "WBR": true,
}

// leftOut reports whether element i is left out with its subtree: not
// rendered, aria-hidden or inert.
func (d *domDoc) leftOut(i int32, tag string) bool {
	if !d.live[i] || unrendered[tag] || d.ariaHidden(i, tag) {
		return true
	}
	_, inert := d.attr(i, "inert")
	return inert
}

// visitElement renders element i (see visit): its line, when it has a role
// and is shown, then its subtree, a frame's document or a select's options
// under it.
func (r *domRenderer) visitElement(d *domDoc, i int32, depth int, frame string, level int) {
	tag := d.tag(i)
	if d.leftOut(i, tag) {
		return
	}
	if tag == "LABEL" && d.labelsToggle(i) {
		// Folded into its control: a control inside the label is shown in
		// the label's place.
		if c := d.labelControl(i); c > i && c < d.subtreeEnd(i) {
			r.visit(d, c, depth, "", frame, level+1)
		}
		return
	}
	if p, ok := d.pseudo[i]; ok {
		r.pseudo(d, i, p, depth, frame)
		return
	}
	next, name := depth, ""
	if !d.hidden[i] {
		var done bool
		if next, name, done = r.elementLine(d, i, tag, depth, frame); done {
			return
		}
		if tag == "IFRAME" || tag == "FRAME" {
			r.frame(d, i, next)
			return
		}
	}
	d.eachChild(i, func(c int32) { r.visit(d, c, next, name, frame, level+1) })
}

// elementLine renders shown element i's line when it has a role and, if
// generic, a name; it returns the depth of its children, its name, and
// whether its subtree is rendered already (a select's options) or not at
// all (a leaf, a control, an element whose text is its value).
func (r *domRenderer) elementLine(d *domDoc, i int32, tag string, depth int, frame string) (next int, name string, done bool) {
	role := d.role(i, tag)
	if role != "" {
		name = d.accName(i, tag, role)
		if alt, ok := d.attr(i, "alt"); role == "image" && name == "" && ok && alt == "" {
			role = "" // an image with alt="" is decoration
		}
	}
	if role == "" || (role == "generic" && name == "") {
		if role == "generic" && r.clickable && d.clickableLeaf(i, tag) {
			name = clickableName(d.text(i))
			r.line(SnapshotNode{Ref: d.ref(i), Role: RoleClickable, Name: name, Depth: depth, Frame: frame})
			return depth + 1, name, false
		}
		return depth, name, false
	}
	value := d.valueOf(i, tag, role)
	r.line(SnapshotNode{Ref: d.ref(i), Role: role, Name: name, Value: value, Depth: depth, Frame: frame})
	next = depth + 1
	switch {
	case tag == "SELECT":
		r.options(d, i, next, frame)
		return next, name, true
	case leafRoles[role] || tag == "TEXTAREA" || tag == "svg" || tag == "INPUT":
		return next, name, true
	}
	// An element whose value is its text shows the value only.
	return next, name, value != "" && d.textOnly(i)
}

// frame renders the document of frame element i under a "frame" line at
// depth: the document the answer holds, or, for a cross-site frame, the
// document read through its own target; a cross-site frame that could not
// be read gets a line saying why under its "frame" line and is listed in
// SkippedFrames.
func (r *domRenderer) frame(d *domDoc, i int32, depth int) {
	if ci, ok := d.contentDoc[i]; ok {
		if ci > 0 && ci < len(r.docs) && !r.placed[ci] {
			r.line(SnapshotNode{Role: "frame", Name: r.docs[ci].url, Depth: depth})
			r.renderDoc(ci, depth+1, r.docs[ci].url)
		}
		return
	}
	cf, ok := r.cross[ownerAt{d.at, i}]
	if ok && cf.doc > 0 && cf.doc < len(r.docs) && !r.placed[cf.doc] {
		u := r.docs[cf.doc].url
		r.line(SnapshotNode{Role: "frame", Name: u, Depth: depth})
		r.renderDoc(cf.doc, depth+1, u)
		return
	}
	src, _ := d.attr(i, "src")
	if u, err := url.Parse(d.url); err == nil {
		if ref, err := u.Parse(strings.TrimSpace(src)); err == nil {
			src = ref.String()
		}
	}
	why := cf.why
	if why == "" {
		why = "it was not found"
	}
	r.line(SnapshotNode{Role: "frame", Name: src, Depth: depth})
	r.line(SnapshotNode{Role: "StaticText", Name: "[" + notRead + why + "]", Depth: depth + 1, Frame: src})
	r.skipped = append(r.skipped, src+": "+notRead+why)
}

// options renders select element i's options at depth, each group's under
// a "group" line.
func (r *domRenderer) options(d *domDoc, i int32, depth int, frame string) {
	for c := d.first[i]; c >= 0; c = d.next[c] {
		switch d.tag(c) {
		case "OPTION":
			r.line(SnapshotNode{Ref: d.ref(c), Role: "option", Name: d.optionText(c), Depth: depth, Frame: frame})
		case "OPTGROUP":
			label, _ := d.attr(c, "label")
			r.line(SnapshotNode{Ref: d.ref(c), Role: "group", Name: collapseString(label), Depth: depth, Frame: frame})
			for o := d.first[c]; o >= 0; o = d.next[o] {
				if d.tag(o) == "OPTION" {
					r.line(SnapshotNode{Ref: d.ref(o), Role: "option", Name: d.optionText(o), Depth: depth + 1, Frame: frame})
				}
			}
		}
	}
}

// pseudo renders a generated box: a list item's marker as Chromium's
// ListMarker, ::before and ::after content as text.
func (r *domRenderer) pseudo(d *domDoc, i int32, kind string, depth int, frame string) {
	t := capName(collapseString(d.ltext[i]))
	if t == "" || d.hidden[i] {
		return
	}
	switch kind {
	case "marker":
		if p := d.parent[i]; p >= 0 && d.tag(p) == "LI" {
			r.line(SnapshotNode{Ref: d.ref(i), Role: "ListMarker", Name: t, Depth: depth, Frame: frame})
		}
	case "before", "after":
		r.line(SnapshotNode{Role: "StaticText", Name: t, Depth: depth, Frame: frame})
	}
}

// maxClickableName bounds the name of a RoleClickable line, in bytes (an
// ellipsis follows a name cut there).
const maxClickableName = 100

// clickableName is text cut to maxClickableName bytes.
func clickableName(text string) string {
	if len(text) <= maxClickableName {
		return text
	}
	n := maxClickableName
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + "…"
}

// clickableLeaf reports whether element i is shown as RoleClickable: it
// responds to clicks, is not the document's html or body, and holds no
// element that is focusable by its tag or tabindex or responds to clicks
// itself (an element that only relays its descendants' clicks is left
// out).
func (d *domDoc) clickableLeaf(i int32, tag string) bool {
	if !d.clickable[i] || tag == "HTML" || tag == "BODY" {
		return false
	}
	end := d.subtreeEnd(i)
	for e := i + 1; e < end; e++ {
		if d.typ[e] == 1 && (d.clickable[e] || d.focusable(e, d.tag(e))) {
			return false
		}
	}
	return true
}
