package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// Snapshot limits.
const (
	// DefaultSnapshotMaxNodes bounds the rendered nodes when MaxNodes is 0.
	DefaultSnapshotMaxNodes = 1500
	// MaxSnapshotNodes is the largest MaxNodes accepted.
	MaxSnapshotNodes = 10000
)

// SnapshotInput is the browser_snapshot tool input.
type SnapshotInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// MaxNodes bounds the rendered nodes (default DefaultSnapshotMaxNodes,
	// max MaxSnapshotNodes); the rest is cut and Truncated set.
	MaxNodes int `json:"max_nodes,omitempty"`
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

// SnapshotResult is the accessibility tree of the page (TOOL-1).
type SnapshotResult struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// Text is the tree as indented lines, e.g.
	//   - button "Send" [ref=e42]
	Text  string         `json:"text"`
	Nodes []SnapshotNode `json:"nodes"`
	// Truncated is true when MaxNodes cut the tree.
	Truncated bool `json:"truncated,omitempty"`
	// SkippedFrames lists child frames whose tree could not be read (for
	// example an out-of-process cross-site frame), with the reason.
	SkippedFrames []string `json:"skippedFrames,omitempty"`
	Call
}

// Snapshot reads the page's accessibility tree (Accessibility.getFullAXTree,
// once for the main frame and once per child frame from Page.getFrameTree)
// and renders the nodes that carry meaning: ignored nodes and nameless
// generic containers are flattened into their children, inline text boxes are
// dropped. Every node with a DOM node gets a ref ("e<backendDOMNodeId>") that
// Click, Type, Hover, SelectOption, Extract … accept.
func (p *Page) Snapshot(ctx context.Context, in SnapshotInput) (SnapshotResult, error) {
	const op = "snapshot"
	max := in.MaxNodes
	switch {
	case max == 0:
		max = DefaultSnapshotMaxNodes
	case max < 0 || max > MaxSnapshotNodes:
		return SnapshotResult{}, invalidInput(op, fmt.Sprintf("max_nodes must be 1–%d", MaxSnapshotNodes))
	}
	var res SnapshotResult
	var loc struct{ URL, Title string }
	if err := p.evaluate(ctx, op, `({URL: location.href, Title: document.title})`, false, &loc); err != nil {
		return res, err
	}
	res.URL, res.Title = loc.URL, loc.Title

	tree, err := cdp.Call(ctx, p.s, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return res, wrap(op, err)
	}
	r := renderer{max: max}
	main, err := cdp.Call(ctx, p.s, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return res, wrap(op, err)
	}
	r.render(main.Nodes, "")
	if tree.FrameTree != nil {
		var walk func(ft *page.FrameTree)
		walk = func(ft *page.FrameTree) {
			for _, child := range ft.ChildFrames {
				if child.Frame == nil {
					continue
				}
				if ctx.Err() != nil || r.truncated {
					return
				}
				sub, err := cdp.Call(ctx, p.s, accessibility.GetFullAXTree,
					accessibility.GetFullAXTreeParams{FrameID: child.Frame.ID})
				if err != nil {
					res.SkippedFrames = append(res.SkippedFrames, child.Frame.URL+": "+err.Error())
				} else {
					r.render(sub.Nodes, child.Frame.URL)
				}
				walk(child)
			}
		}
		walk(tree.FrameTree)
	}
	if ctx.Err() != nil {
		return res, &Error{Op: op, Code: CodeTimeout, Message: "deadline passed while reading frames", Err: ctx.Err()}
	}
	res.Nodes, res.Truncated = r.nodes, r.truncated
	res.Text = r.b.String()
	return res, nil
}

type renderer struct {
	max       int
	nodes     []SnapshotNode
	b         strings.Builder
	truncated bool
}

// skipRoles are dropped with their subtree; flatRoles are replaced by their
// children unless they carry a name.
var (
	skipRoles = map[string]bool{"InlineTextBox": true, "LineBreak": true}
	flatRoles = map[string]bool{"generic": true, "none": true, "presentation": true, "GenericContainer": true}
)

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s any
	if json.Unmarshal(v.Value, &s) != nil {
		return ""
	}
	switch x := s.(type) {
	case string:
		return strings.Join(strings.Fields(x), " ")
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

func (r *renderer) render(nodes []*accessibility.Node, frameURL string) {
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(nodes))
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	depth0 := 0
	if frameURL != "" {
		r.line(SnapshotNode{Role: "frame", Name: frameURL, Depth: 0})
		depth0 = 1
	}
	var visit func(n *accessibility.Node, depth int)
	visit = func(n *accessibility.Node, depth int) {
		if r.truncated {
			return
		}
		role, name := axString(n.Role), axString(n.Name)
		if skipRoles[role] {
			return
		}
		next := depth
		show := !n.Ignored && !(flatRoles[role] && name == "") && role != "RootWebArea" && role != "WebArea"
		if role == "StaticText" {
			// A text node repeating its parent's name adds nothing.
			if p := byID[n.ParentID]; p != nil && axString(p.Name) == name {
				show = false
			}
		}
		if show {
			sn := SnapshotNode{Role: role, Name: name, Value: axString(n.Value), Depth: depth, Frame: frameURL}
			if n.BackendDOMNodeID != 0 && role != "StaticText" {
				sn.Ref = Ref(n.BackendDOMNodeID)
			}
			r.line(sn)
			next = depth + 1
		}
		for _, id := range n.ChildIDs {
			if c := byID[id]; c != nil {
				visit(c, next)
			}
		}
	}
	for _, n := range nodes {
		if n.ParentID == "" {
			visit(n, depth0)
		}
	}
}

func (r *renderer) line(n SnapshotNode) {
	if len(r.nodes) >= r.max {
		r.truncated = true
		return
	}
	r.nodes = append(r.nodes, n)
	r.b.WriteString(strings.Repeat("  ", n.Depth))
	r.b.WriteString("- ")
	if n.Role == "StaticText" {
		r.b.WriteString("text")
	} else {
		r.b.WriteString(n.Role)
	}
	if n.Name != "" {
		fmt.Fprintf(&r.b, " %q", n.Name)
	}
	if n.Value != "" {
		fmt.Fprintf(&r.b, " value=%q", n.Value)
	}
	if n.Ref != "" {
		fmt.Fprintf(&r.b, " [ref=%s]", n.Ref)
	}
	r.b.WriteByte('\n')
}
