package tools

import (
	"context"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/target"
)

// elem is an element a Target names, resolved: the Page of the session its
// node is in (the page's own, or for a frame ref the cross-site frame's),
// the node, and its ref. Every command about the element goes to that
// Page, input events too (at coordinates of the frame's viewport): the
// browser answers an input event sent to the page's session for a
// cross-site frame before the frame has handled it.
type elem struct {
	*Page
	node cdp.BackendNodeID
	ref  string
	// hops lead from the page to the element's frame, outermost first.
	hops []frameHop
}

// frameHop is a cross-site frame on the way to an element: the Page of
// the process its iframe element is in, and its frame (target) id.
type frameHop struct {
	parent *Page
	frame  cdp.FrameID
}

// element resolves t (see resolve); a frame ref is resolved in its frame's
// own session, attached for the call. done detaches what element attached;
// the caller calls it once the action is over.
func (p *Page) element(ctx context.Context, op string, t Target) (e elem, done func(), err error) {
	done = func() {}
	if t.Ref == "" || !strings.HasPrefix(strings.TrimSpace(t.Ref), FrameRefPrefix) {
		node, err := p.resolve(ctx, op, t)
		return elem{Page: p, node: node, ref: Ref(node)}, done, err
	}
	key, node, err := parseAnyRef(t.Ref)
	if err != nil {
		return e, done, invalidInput(op, err.Error())
	}
	fs, ok := p.s.(frameSessions)
	if !ok {
		return e, done, &Error{Op: op, Code: CodeNotFound, Message: "ref " + t.Ref + " is in a cross-site frame, which this session cannot address"}
	}
	chain, err := p.frameChain(ctx, op, key)
	if err != nil {
		return e, done, err
	}
	cross := crossReader{p: p}
	done = cross.close
	at := p
	for _, id := range chain {
		att, err := cdp.Call(ctx, p.s, target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: new(true)})
		if err != nil {
			return e, done, elementErr(op, "the element's frame could not be attached to", err)
		}
		cross.detachLater(ctx, p.s, att.SessionID)
		e.hops = append(e.hops, frameHop{parent: at, frame: cdp.FrameID(id)})
		at = &Page{s: fs.Session(string(att.SessionID)), opts: p.opts}
	}
	if _, err := cdp.Call(ctx, at.s, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: node}); err != nil {
		return e, done, at.nodeErr(op, err)
	}
	e.Page, e.node, e.ref = at, node, frameRef(string(chain[len(chain)-1]), node)
	return e, done, nil
}

// frameChain returns the target ids of the cross-site frames from the
// page down to the frame whose frame key is key: Target.getTargets lists
// the iframe targets, Target.getTargetInfo names the page's own, and each
// frame's parent leads to it. CodeNotFound when no frame of this page has
// the key.
func (p *Page) frameChain(ctx context.Context, op, key string) ([]target.ID, error) {
	list, err := cdp.Call(ctx, p.s, target.GetTargets, target.GetTargetsParams{Filter: target.Filter{{Type: "iframe"}}})
	if err != nil {
		return nil, wrap(op, err)
	}
	self, err := cdp.Call(ctx, p.s, target.GetTargetInfo, target.GetTargetInfoParams{})
	if err != nil {
		return nil, wrap(op, err)
	}
	if self.TargetInfo == nil {
		return nil, &Error{Op: op, Code: CodeBackend, Message: "Target.getTargetInfo answered without the page's target"}
	}
	parent := map[target.ID]target.ID{}
	for _, ti := range list.TargetInfos {
		if ti != nil {
			parent[ti.TargetID] = ti.ParentID
		}
	}
	for id := range parent {
		if frameKey(string(id)) != key {
			continue
		}
		var chain []target.ID
		for at := id; len(chain) <= maxFrameNesting; at = parent[at] {
			chain = append(chain, at)
			if parent[at] == self.TargetInfo.TargetID {
				for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
					chain[i], chain[j] = chain[j], chain[i]
				}
				return chain, nil
			}
			if _, ok := parent[parent[at]]; !ok {
				break
			}
		}
	}
	return nil, &Error{Op: op, Code: CodeNotFound, Message: "no cross-site frame of the page has the element's frame key " + key + " (the frame went away? take a new snapshot)"}
}

// centre scrolls the element into view and returns the centre of its
// content box in CSS pixels of its own frame's viewport (lx, ly: where
// input events sent to e's session go), and of the page's viewport (x, y:
// plus where the content box of each iframe on the way is).
func (e elem) centre(ctx context.Context, op string) (lx, ly, x, y float64, err error) {
	if lx, ly, err = e.Page.centre(ctx, op, e.node); err != nil {
		return 0, 0, 0, 0, err
	}
	x, y = lx, ly
	for _, h := range e.hops {
		owner, err := cdp.Call(ctx, h.parent.s, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: h.frame})
		if err != nil {
			return 0, 0, 0, 0, elementErr(op, "the element's iframe is gone", err)
		}
		box, err := cdp.Call(ctx, h.parent.s, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: owner.BackendNodeID})
		if err != nil {
			return 0, 0, 0, 0, elementErr(op, "the element's iframe has no box (hidden or detached)", err)
		}
		if box.Model == nil || len(box.Model.Content) < 2 {
			return 0, 0, 0, 0, &Error{Op: op, Code: CodeNotFound, Message: "the element's iframe has no box (hidden or detached)"}
		}
		x += box.Model.Content[0]
		y += box.Model.Content[1]
	}
	return lx, ly, x, y, nil
}
