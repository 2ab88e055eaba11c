package tools

import (
	"fmt"
	"strings"
)

// MaxSnapshotSearchBytes bounds SnapshotInput.Search.
const MaxSnapshotSearchBytes = 1000

// snapView is what a snapshot call narrows the page's tree to
// (SnapshotInput's Ref, MaxDepth, Interactive, Search), checked.
type snapView struct {
	ref         string
	maxDepth    int
	interactive bool
	search      string // lower case
}

// viewOf checks in's narrowing fields and returns them.
func viewOf(op string, in SnapshotInput) (snapView, error) {
	v := snapView{ref: strings.TrimSpace(in.Ref), maxDepth: in.MaxDepth, interactive: in.Interactive}
	if v.ref != "" {
		if _, _, err := parseAnyRef(v.ref); err != nil {
			return v, invalidInput(op, err.Error())
		}
	}
	if in.MaxDepth < 0 || in.MaxDepth > maxDOMDepth {
		return v, invalidInput(op, fmt.Sprintf("max_depth must be 0–%d (0: no limit)", maxDOMDepth))
	}
	if len(in.Search) > MaxSnapshotSearchBytes {
		return v, invalidInput(op, fmt.Sprintf("search is %d bytes; at most %d are accepted", len(in.Search), MaxSnapshotSearchBytes))
	}
	v.search = strings.ToLower(strings.TrimSpace(in.Search))
	if in.Search != "" && v.search == "" {
		return v, invalidInput(op, "search is only white space")
	}
	return v, nil
}

// whole reports whether v shows the whole tree.
func (v snapView) whole() bool {
	return v.ref == "" && v.maxDepth == 0 && !v.interactive && v.search == ""
}

// apply narrows nodes (a rendered tree, depth first) to v: the subtree of
// ref (its line at depth 0), then the levels above maxDepth, then the
// interactive nodes with their context, then the matches of search with
// their ancestors. Depths are those of the lines kept. It fails with
// CodeNotFound when no line has ref.
func (v snapView) apply(op string, nodes []SnapshotNode) ([]SnapshotNode, error) {
	if v.ref != "" {
		sub, ok := subtree(nodes, v.ref)
		if !ok {
			return nil, &Error{Op: op, Code: CodeNotFound, Message: "no node of the page has ref " + v.ref + " (stale ref? take a new snapshot)"}
		}
		nodes = sub
	}
	if v.maxDepth > 0 {
		nodes = keep(nodes, func(n *SnapshotNode) bool { return n.Depth < v.maxDepth })
	}
	if v.interactive {
		nodes = interactiveNodes(nodes)
	}
	if v.search != "" {
		nodes = searchNodes(nodes, v.search)
	}
	return nodes, nil
}

// subtree returns a copy of the lines of the node with ref and its
// descendants, rebased to depth 0.
func subtree(nodes []SnapshotNode, ref string) ([]SnapshotNode, bool) {
	for i := range nodes {
		if nodes[i].Ref != ref {
			continue
		}
		base := nodes[i].Depth
		end := i + 1
		for end < len(nodes) && nodes[end].Depth > base {
			end++
		}
		out := append([]SnapshotNode(nil), nodes[i:end]...)
		for k := range out {
			out[k].Depth -= base
		}
		return out, true
	}
	return nil, false
}

// keep returns the nodes f keeps, in a new slice.
func keep(nodes []SnapshotNode, f func(*SnapshotNode) bool) []SnapshotNode {
	var out []SnapshotNode
	for i := range nodes {
		if f(&nodes[i]) {
			out = append(out, nodes[i])
		}
	}
	return out
}

// actionRoles are the roles of the nodes an agent acts on: click, type,
// select, check, open. RoleClickable is the DOM source's element that
// responds to clicks without one of them.
var actionRoles = map[string]bool{
	"link": true, "button": true, "textbox": true, "searchbox": true, "combobox": true, "listbox": true,
	"option": true, "checkbox": true, "radio": true, "switch": true, "slider": true, "spinbutton": true,
	"tab": true, "menuitem": true, "menuitemcheckbox": true, "menuitemradio": true, "treeitem": true,
	"DisclosureTriangle": true, "ColorWell": true, "Date": true, "InputTime": true, "DateTime": true,
	"PopUpButton": true, "ToggleButton": true, RoleClickable: true,
}

// contextRoles are the containers shown around the interactive nodes in
// them (a dialog, a form, a landmark, a named group), so that an agent
// knows which of two "Save" buttons is which.
var contextRoles = map[string]bool{
	"dialog": true, "alertdialog": true, "form": true, "navigation": true, "main": true, "banner": true,
	"contentinfo": true, "complementary": true, "region": true, "search": true, "menu": true, "menubar": true,
	"tablist": true, "radiogroup": true, "toolbar": true, "tree": true, "grid": true, "frame": true,
}

// RoleClickable is the role of an element the DOM source shows only when a
// snapshot is narrowed (SnapshotInput's Ref, MaxDepth, Interactive, Search
// or Diff): one with a click listener (or otherwise responding to clicks)
// that has no role of its own, no interactive element and no other such
// element in it; its name is its text, cut at maxClickableName bytes.
const RoleClickable = "clickable"

// interactiveNodes keeps the nodes an agent can act on (actionRoles) and,
// as their context, headings and the context containers (contextRoles, a
// group only with a name) that hold one of them, and the notices of
// frames that were not read; depths become the levels among the lines
// kept.
func interactiveNodes(nodes []SnapshotNode) []SnapshotNode {
	want := make([]bool, len(nodes))
	// stack holds the indexes of the context containers the walk is in.
	var stack []int
	for i := range nodes {
		n := &nodes[i]
		for len(stack) > 0 && nodes[stack[len(stack)-1]].Depth >= n.Depth {
			stack = stack[:len(stack)-1]
		}
		switch {
		case actionRoles[n.Role] || n.Role == "heading" || notice(nodes, i):
			want[i] = true
			for _, a := range stack {
				want[a] = true
			}
		case contextRoles[n.Role] || n.Role == "group" && n.Name != "":
			stack = append(stack, i)
		}
	}
	return relevel(nodes, want)
}

// notice reports whether node i is a line the snapshot writes itself under
// a frame's line (a frame that was not read).
func notice(nodes []SnapshotNode, i int) bool {
	n := &nodes[i]
	return n.Role == "StaticText" && n.Ref == "" && strings.HasPrefix(n.Name, "[") && i > 0 &&
		nodes[i-1].Role == "frame" && nodes[i-1].Depth == n.Depth-1
}

// searchNodes keeps the nodes whose name or value holds q (lower case),
// with their ancestors.
func searchNodes(nodes []SnapshotNode, q string) []SnapshotNode {
	want := make([]bool, len(nodes))
	var path []int
	for i := range nodes {
		n := &nodes[i]
		for len(path) > 0 && nodes[path[len(path)-1]].Depth >= n.Depth {
			path = path[:len(path)-1]
		}
		if containsFold(n.Name, q) || containsFold(n.Value, q) {
			want[i] = true
			for _, a := range path {
				want[a] = true
			}
		}
		path = append(path, i)
	}
	return relevel(nodes, want)
}

// containsFold reports whether s holds q (lower case), ignoring case.
func containsFold(s, q string) bool {
	return s != "" && strings.Contains(strings.ToLower(s), q)
}

// relevel returns the nodes want keeps, each at the depth of the number of
// kept lines it is in.
func relevel(nodes []SnapshotNode, want []bool) []SnapshotNode {
	var out []SnapshotNode
	var path []int // the walk's ancestors, innermost last
	kept := 0      // how many of path are kept
	for i := range nodes {
		for len(path) > 0 && nodes[path[len(path)-1]].Depth >= nodes[i].Depth {
			if want[path[len(path)-1]] {
				kept--
			}
			path = path[:len(path)-1]
		}
		if want[i] {
			n := nodes[i]
			n.Depth = kept
			out = append(out, n)
			kept++
		}
		path = append(path, i)
	}
	return out
}

// renderLines writes head, then nodes as a snapshot's lines, at most max
// of them, then the line saying the rest was cut, if it was.
func renderLines(nodes []SnapshotNode, max int, head string) snapLines {
	r := snapLines{max: max}
	r.grow(len(nodes))
	r.b.WriteString(head)
	for _, n := range nodes {
		if r.truncated {
			break
		}
		r.line(n)
	}
	r.finish()
	return r
}
