package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
)

// Snapshot limits.
const (
	// DefaultSnapshotMaxNodes bounds the rendered nodes when MaxNodes is 0:
	// large enough for a page of several thousand elements to come whole.
	DefaultSnapshotMaxNodes = 10000
	// MaxSnapshotNodes is the largest MaxNodes accepted.
	MaxSnapshotNodes = 50000
	// snapshotFrameFetches bounds the child frames read at once.
	snapshotFrameFetches = 8
)

// SnapshotInput is the browser_snapshot tool input.
type SnapshotInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// MaxNodes bounds the rendered nodes (default DefaultSnapshotMaxNodes,
	// max MaxSnapshotNodes); the rest is cut, Truncated set and the Text
	// ends with a line saying so.
	MaxNodes int `json:"max_nodes,omitempty"`
	// Source is SnapshotSourceDOM (the default when "") or
	// SnapshotSourceAccessibility.
	Source string `json:"source,omitempty"`

	// The fields below narrow the snapshot; with all of them unset it is
	// the whole tree. They apply in this order, and MaxNodes to what is
	// left. A narrowed snapshot of the DOM source also shows the elements
	// that respond to clicks without a role of their own (RoleClickable).

	// Ref shows only the subtree of the node with this ref (from an earlier
	// snapshot), its line at depth 0; CodeNotFound when no line has it.
	Ref string `json:"ref,omitempty"`
	// MaxDepth, when above 0, shows only the lines at depth 0 to
	// MaxDepth-1 (at most 1024).
	MaxDepth int `json:"max_depth,omitempty"`
	// Interactive shows only the nodes an agent acts on (links, buttons,
	// fields, selects and their options, checkboxes, radios, tabs, menu
	// items, RoleClickable elements …), with, as their context, the
	// headings and the dialogs, forms, landmarks, frames and named groups
	// that hold one of them.
	Interactive bool `json:"interactive,omitempty"`
	// Search shows only the nodes whose name or value holds it (ignoring
	// case; at most MaxSnapshotSearchBytes), each with the lines it is in.
	Search string `json:"search,omitempty"`
	// Diff shows what changed since the conversation's previous snapshot
	// (SnapshotResult.Diff), both narrowed as this call asks. Only
	// Tools keeps snapshots (each call's, per conversation, a bounded
	// number); Page.Snapshot refuses Diff with CodeInvalidInput.
	Diff bool `json:"diff,omitempty"`
}

// SnapshotNode is one rendered accessibility node.
type SnapshotNode struct {
	// Ref targets the node's element in Click, Type, … ("" when the node has
	// no DOM node).
	Ref   string `json:"ref,omitempty"`
	Role  string `json:"role"`
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
	Depth int    `json:"depth"`
	// Frame is the URL of the frame the node is in, "" for the main frame.
	Frame string `json:"frame,omitempty"`
}

// SnapshotResult is the accessibility tree of the page.
type SnapshotResult struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// Text is the tree as indented lines, e.g.
	//   - button "Send" [ref=e42]
	// A child frame's tree follows its iframe element's line, under a line
	//   - frame "https://…"
	// one level deeper. When MaxNodes cut the tree, the last line is
	//   [snapshot cut at N nodes: …]
	Text  string         `json:"text"`
	Nodes []SnapshotNode `json:"nodes"`
	// Truncated is true when MaxNodes cut the tree (the Text says so too).
	Truncated bool `json:"truncated,omitempty"`
	// Diff is set when the input asked for it. The Text then holds its
	// lines, under a first line that counts them ("+ " appeared, "~ "
	// changed, "- " disappeared), or, when there is no previous snapshot or
	// those lines would be longer, the whole snapshot under a line saying
	// so; Nodes holds the nodes of those lines.
	Diff *SnapshotDiff `json:"diff,omitempty"`
	// SkippedFrames lists child frames whose tree could not be read (for
	// example an out-of-process cross-site frame), with the reason.
	SkippedFrames []string `json:"skippedFrames,omitempty"`
	Call
}

// Snapshot sources (SnapshotInput.Source).
const (
	// SnapshotSourceDOM renders the page from one DOMSnapshot.captureSnapshot
	// (the default): roles and names are computed from the DOM and its layout.
	SnapshotSourceDOM = "dom"
	// SnapshotSourceAccessibility renders Chromium's own accessibility tree
	// (Accessibility.getFullAXTree of every frame): Chromium's roles and
	// names exactly, at several times the cost on a large page.
	SnapshotSourceAccessibility = "accessibility"
)

// Snapshot renders the page as a tree of roles and names and gives
// every node with a DOM element a ref ("e<backendDOMNodeId>") that Click,
// Type, Hover, SelectOption, Extract … accept. Ignored nodes and nameless
// generic containers are flattened into their children; a text node that
// repeats its parent's name is left out.
//
// The default source (SnapshotSourceDOM) reads the page and every
// same-process frame with one DOMSnapshot.captureSnapshot and computes each
// element's role, name and value in Go the way Chromium's accessibility tree
// does for HTML (roles from the role attribute or the tag, names from
// aria-labelledby, aria-label, labels, alt, value, legend, caption, content,
// title, placeholder; a password field's value masked): only rendered
// content is shown (no layout object, visibility hidden, aria-hidden and
// inert subtrees are left out). A child frame's tree follows its iframe's
// line; a frame whose document the answer does not hold (a cross-site frame,
// in a process of its own) gets a line saying it was not read and is listed
// in SkippedFrames. SnapshotSourceAccessibility reads Chromium's accessibility
// tree instead (Accessibility.getFullAXTree once per frame, child frames at
// most 8 at once, each under its iframe found with DOM.getFrameOwner).
//
// Errors: CodeInvalidInput for MaxNodes out of range or an unknown Source,
// CodeTimeout when ctx ends while reading, otherwise the backend's error
// wrapped.
func (p *Page) Snapshot(ctx context.Context, in SnapshotInput) (SnapshotResult, error) {
	if in.Diff {
		return SnapshotResult{}, invalidInput("snapshot", "diff compares with the conversation's previous snapshot, which only Tools keeps")
	}
	res, _, err := p.snapshot(ctx, in, nil)
	return res, err
}

// snapshot is Snapshot, comparing with prev (nil: none) for in.Diff. It
// also returns the snapshot to keep for the conversation's next diff:
// the whole tree, not narrowed.
func (p *Page) snapshot(ctx context.Context, in SnapshotInput, prev *keptSnapshot) (SnapshotResult, keptSnapshot, error) {
	const op = "snapshot"
	var res SnapshotResult
	max := in.MaxNodes
	switch {
	case max == 0:
		max = DefaultSnapshotMaxNodes
	case max < 0 || max > MaxSnapshotNodes:
		return res, keptSnapshot{}, invalidInput(op, fmt.Sprintf("max_nodes must be 1–%d", MaxSnapshotNodes))
	}
	v, err := viewOf(op, in)
	if err != nil {
		return res, keptSnapshot{}, err
	}
	narrow := !v.whole() || in.Diff
	limit := max
	if narrow {
		limit = MaxSnapshotNodes // narrowed below, then cut at max
	}
	switch in.Source {
	case "", SnapshotSourceDOM:
		res, err = p.snapshotDOM(ctx, op, limit, narrow)
	case SnapshotSourceAccessibility:
		res, err = p.snapshotAX(ctx, op, limit)
	default:
		return res, keptSnapshot{}, invalidInput(op, fmt.Sprintf("source must be %q or %q", SnapshotSourceDOM, SnapshotSourceAccessibility))
	}
	if err != nil {
		return res, keptSnapshot{}, err
	}
	kept := keptSnapshot{nodes: res.Nodes, clickable: narrow && in.Source != SnapshotSourceAccessibility}
	if !narrow {
		return res, kept, nil
	}
	nodes, err := v.apply(op, res.Nodes)
	if err != nil {
		return SnapshotResult{}, keptSnapshot{}, err
	}
	cut := res.Truncated // the page has more than MaxSnapshotNodes nodes
	var lines snapLines
	if in.Diff {
		res.Diff, lines = diffView(op, v, prev, nodes, kept.clickable, max)
	} else {
		lines = renderLines(nodes, max, "")
	}
	lines.result(&res)
	if cut {
		res.Truncated = true
		res.Text += fmt.Sprintf("[the page has more than %d nodes: this view covers the first %d]\n", MaxSnapshotNodes, MaxSnapshotNodes)
	}
	return res, kept, nil
}

// diffView compares nodes (narrowed by v, with RoleClickable lines when
// clickable) with prev narrowed the same way, and renders the changes, at
// most max lines; or the whole of nodes when there is nothing to compare
// with or the changes' text would be longer.
func diffView(op string, v snapView, prev *keptSnapshot, nodes []SnapshotNode, clickable bool, max int) (*SnapshotDiff, snapLines) {
	var before []SnapshotNode
	base := prev != nil
	if base {
		before = prev.nodes
		if clickable && !prev.clickable {
			nodes = withoutRole(nodes, RoleClickable)
		}
		if !clickable && prev.clickable {
			before = withoutRole(before, RoleClickable)
		}
		var err error
		if before, err = v.apply(op, before); err != nil {
			base = false // the element was not in the previous snapshot
		}
	}
	whole := renderLines(nodes, max, wholeNote(base))
	if base {
		d := diffNodes(before, nodes)
		if lines := d.render(max); lines.b.Len() <= whole.b.Len() {
			return &d, lines
		}
	}
	return &SnapshotDiff{Whole: true}, whole
}

// snapshotAX renders Chromium's accessibility tree of every frame it can
// read (SnapshotSourceAccessibility).
func (p *Page) snapshotAX(ctx context.Context, op string, max int) (SnapshotResult, error) {
	var res SnapshotResult
	// On a session that has not selected its backend yet, Page.getFrameTree
	// goes first and alone: the first command of a call selects the backend
	// and attaches to the conversation's page, and a failure there (the
	// conversation's tab closed, say) must end the call rather than race
	// other first commands into selecting again. The page's location, the
	// main frame's AX tree and each child frame's tree and owner are
	// independent of each other; on a session already bound to its backend
	// (a kept Client) the frame tree is asked for together with the first
	// two, so the call waits one round trip less.
	var (
		wg              sync.WaitGroup
		loc             struct{ URL, Title string }
		locErr, mainErr error
		mainTree        axTree
		tree            page.GetFrameTreeResult
		err             error
	)
	bound := p.bound()
	if !bound {
		if tree, err = cdp.Call(ctx, p.s, page.GetFrameTree, cdp.Empty{}); err != nil {
			return res, wrap(op, err)
		}
	}
	wg.Go(func() { locErr = p.evaluate(ctx, op, `({URL: location.href, Title: document.title})`, false, &loc) })
	wg.Go(func() {
		mainErr = p.s.Call(ctx, accessibility.CommandGetFullAXTree, accessibility.GetFullAXTreeParams{}, &mainTree)
	})
	if bound {
		if tree, err = cdp.Call(ctx, p.s, page.GetFrameTree, cdp.Empty{}); err != nil {
			wg.Wait()
			return res, wrap(op, err)
		}
	}
	// frames[0] is the main frame; its tree joins once read. The slice is
	// complete before any goroutine takes an element's address.
	frames := []snapFrame{{parent: -1}}
	if tree.FrameTree != nil {
		frames = appendChildFrames(frames, tree.FrameTree, 0)
	}
	if len(frames) > 1 {
		sem := make(chan struct{}, snapshotFrameFetches)
		for i := 1; i < len(frames); i++ {
			f := &frames[i]
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					f.err = ctx.Err()
					return
				}
				defer func() { <-sem }()
				f.err = p.s.Call(ctx, accessibility.CommandGetFullAXTree,
					accessibility.GetFullAXTreeParams{FrameID: f.id}, &f.tree)
				if f.err == nil {
					if o, err := cdp.Call(ctx, p.s, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: f.id}); err == nil {
						f.owner = o.BackendNodeID
					}
				}
			})
		}
	}
	wg.Wait()
	frames[0].tree = mainTree
	for _, err := range []error{locErr, mainErr} {
		if err != nil {
			if ctx.Err() != nil {
				return res, &Error{Op: op, Code: CodeTimeout, Message: "deadline passed while reading the page", Err: ctx.Err()}
			}
			return res, wrap(op, err)
		}
	}
	if ctx.Err() != nil {
		return res, &Error{Op: op, Code: CodeTimeout, Message: "deadline passed while reading frames", Err: ctx.Err()}
	}
	res.URL, res.Title = loc.URL, loc.Title
	for _, f := range frames[1:] {
		if f.err != nil {
			res.SkippedFrames = append(res.SkippedFrames, f.url+": "+f.err.Error())
		}
	}
	r := newRenderer(max, frames)
	r.renderFrames()
	r.result(&res)
	return res, nil
}

// snapFrame is one frame of a snapshot: the main frame (index 0) or a child
// frame, with the index of its parent frame and its iframe element.
type snapFrame struct {
	id     cdp.FrameID
	url    string
	parent int
	owner  cdp.BackendNodeID
	tree   axTree
	err    error
}

// appendChildFrames appends ft's child frames, depth first in the order of
// the frame tree, with parent as the index of ft's frame.
func appendChildFrames(frames []snapFrame, ft *page.FrameTree, parent int) []snapFrame {
	for _, child := range ft.ChildFrames {
		if child == nil || child.Frame == nil {
			continue
		}
		frames = append(frames, snapFrame{id: child.Frame.ID, url: child.Frame.URL, parent: parent})
		frames = appendChildFrames(frames, child, len(frames)-1)
	}
	return frames
}

// ownerKey names an iframe element: the frame whose tree holds it and its
// backend node id.
type ownerKey struct {
	frame int
	node  cdp.BackendNodeID
}

// snapLines collects a snapshot's nodes and its text, at most max of them.
type snapLines struct {
	max       int
	nodes     []SnapshotNode
	b         strings.Builder
	scratch   []byte
	truncated bool
}

// grow makes room for n of the page's nodes (at most max).
func (r *snapLines) grow(n int) {
	n = min(n, r.max)
	r.nodes = make([]SnapshotNode, 0, n)
	r.b.Grow(n * 40)
}

// finish ends a cut tree's text with the line that says so.
func (r *snapLines) finish() {
	if r.truncated {
		fmt.Fprintf(&r.b, "[snapshot cut at %d nodes: the page has more; pass a larger max_nodes (up to %d) to see it]\n",
			r.max, MaxSnapshotNodes)
	}
}

// result fills res's nodes, text and Truncated.
func (r *snapLines) result(res *SnapshotResult) {
	res.Nodes, res.Truncated = r.nodes, r.truncated
	res.Text = r.b.String()
}

type renderer struct {
	snapLines
	frames []snapFrame
	owners map[ownerKey][]int
	placed []bool
}

func newRenderer(max int, frames []snapFrame) *renderer {
	r := &renderer{snapLines: snapLines{max: max}, frames: frames, placed: make([]bool, len(frames))}
	total := 0
	for i, f := range frames {
		total += len(f.tree.nodes)
		if i > 0 && f.err == nil && f.owner != 0 {
			if r.owners == nil {
				r.owners = map[ownerKey][]int{}
			}
			k := ownerKey{f.parent, f.owner}
			r.owners[k] = append(r.owners[k], i)
		}
	}
	r.grow(total)
	return r
}

// renderFrames renders the main frame, each child frame under its iframe
// element, then the frames whose element was not found.
func (r *renderer) renderFrames() {
	r.renderFrame(0, 0)
	for i := 1; i < len(r.frames); i++ {
		if !r.placed[i] && r.frames[i].err == nil {
			r.renderFrame(i, 0)
		}
	}
	r.finish()
}

// skipRole reports roles dropped with their subtree; flatRole those replaced
// by their children unless they carry a name.
func skipRole(role string) bool { return role == "InlineTextBox" || role == "LineBreak" }

func flatRole(role string) bool {
	switch role {
	case "generic", "none", "presentation", "GenericContainer":
		return true
	}
	return false
}

// renderFrame renders frame fi's tree with its root nodes at depth; a child
// frame gets its "frame" line first.
func (r *renderer) renderFrame(fi, depth int) {
	r.placed[fi] = true
	f := &r.frames[fi]
	frameURL := ""
	if fi > 0 {
		frameURL = f.url
		r.line(SnapshotNode{Role: "frame", Name: f.url, Depth: depth})
		depth++
	}
	t := &f.tree
	index := make(map[int64]int32, len(t.nodes))
	for i := range t.nodes {
		index[t.nodes[i].id] = int32(i)
	}
	var visit func(n *axNode, depth int)
	visit = func(n *axNode, depth int) {
		if r.truncated || skipRole(n.role) {
			return
		}
		next := depth
		role, name := n.role, n.name
		show := !n.ignored && !(flatRole(role) && name == "") && role != "RootWebArea" && role != "WebArea"
		if show && role == "StaticText" && n.hasParent {
			// A text node repeating its parent's name adds nothing.
			if pi, ok := index[n.parent]; ok && t.nodes[pi].name == name {
				show = false
			}
		}
		if show {
			sn := SnapshotNode{Role: role, Name: name, Value: n.value, Depth: depth, Frame: frameURL}
			if n.backend != 0 && role != "StaticText" {
				sn.Ref = Ref(n.backend)
			}
			r.line(sn)
			next = depth + 1
		}
		for _, id := range t.kids[n.kid0 : n.kid0+n.nkids] {
			if ci, ok := index[id]; ok {
				visit(&t.nodes[ci], next)
			}
		}
		if n.backend != 0 && r.owners != nil {
			for _, child := range r.owners[ownerKey{fi, n.backend}] {
				if !r.placed[child] {
					r.renderFrame(child, next)
				}
			}
		}
	}
	for i := range t.nodes {
		if !t.nodes[i].hasParent {
			visit(&t.nodes[i], depth)
		}
	}
}

func (r *snapLines) line(n SnapshotNode) {
	if len(r.nodes) >= r.max {
		r.truncated = true
		return
	}
	r.nodes = append(r.nodes, n)
	b := r.scratch[:0]
	for range n.Depth {
		b = append(b, "  "...)
	}
	b = append(b, "- "...)
	b = appendNode(b, &n)
	b = append(b, '\n')
	r.b.Write(b)
	r.scratch = b
}

// appendNode appends n's line after its "- " mark: its role, quoted name
// and value, and ref.
func appendNode(b []byte, n *SnapshotNode) []byte {
	if n.Role == "StaticText" {
		b = append(b, "text"...)
	} else {
		b = append(b, n.Role...)
	}
	if n.Name != "" {
		b = append(b, ' ')
		b = strconv.AppendQuote(b, n.Name)
	}
	if n.Value != "" {
		b = append(b, " value="...)
		b = strconv.AppendQuote(b, n.Value)
	}
	if n.Ref != "" {
		b = append(b, " [ref="...)
		b = append(b, n.Ref...)
		b = append(b, ']')
	}
	return b
}
