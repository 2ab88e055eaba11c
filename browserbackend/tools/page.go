package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
)

// Page runs the operations of this package on one page reached through a
// cdp.Session: a *browserbackend.Client (every backend in the chain serves
// commands without a session id on the invocation's page), a
// *browserbackend.SessionView, or SessionOf(any ScopedClient). A Page holds no
// state besides its options, so it is cheap to make one per tool call; it is
// safe for concurrent use as far as the session is.
//
// Page methods do not look at browser_mode: Tools validates it and picks the
// backend. Every method returns within ctx's deadline; failures are *Error.
type Page struct {
	s cdp.Session
	// base is the session s wraps (a recorder's): what the page asks of
	// its session besides commands (its kind, flat sessions, dialogs).
	base cdp.Session
	opts PageOptions
}

// PageOptions configures a Page. The zero value works.
type PageOptions struct {
	// ScreenshotDir is where Screenshot writes its files; "" means
	// DefaultScreenshotDir().
	ScreenshotDir string

	// downloads is the calling Tools' download handling (nil: downloads
	// are not watched).
	downloads *pageDownloads
}

// NewPage returns a Page over s.
func NewPage(s cdp.Session, opts PageOptions) *Page {
	if opts.ScreenshotDir == "" {
		opts.ScreenshotDir = DefaultScreenshotDir()
	}
	return &Page{s: s, base: s, opts: opts}
}

// Session returns the session the page runs on.
func (p *Page) Session() cdp.Session { return p.s }

// bound reports whether p's session has selected its backend already (a
// kept browserbackend.Client after its first call): its commands may then
// go out together, since none of them selects.
func (p *Page) bound() bool {
	k, ok := p.base.(interface{ Kind() browserbackend.Kind })
	return ok && k.Kind() != ""
}

// evaluate runs expr in the page's main world and decodes its JSON value
// into out (nil: ignored). A thrown exception is CodePageError.
func (p *Page) evaluate(ctx context.Context, op, expr string, await bool, out any) error {
	t := true
	params := runtime.EvaluateParams{Expression: expr, ReturnByValue: &t}
	if await {
		params.AwaitPromise = &t
	}
	res, err := cdp.Call(ctx, p.s, runtime.Evaluate, params)
	if err != nil {
		return wrap(op, err)
	}
	return pageValue(op, res.Result, res.ExceptionDetails, out)
}

// pageValue turns the answer of Runtime.evaluate or Runtime.callFunctionOn
// into out: a thrown exception is CodePageError, a value that does not decode
// into out too.
func pageValue(op string, obj *runtime.RemoteObject, exc *runtime.ExceptionDetails, out any) error {
	if exc != nil {
		return &Error{Op: op, Code: CodePageError, Message: exceptionText(exc)}
	}
	if obj == nil {
		return decodeValue(nil, out)
	}
	if err := decodeValue(obj.Value, out); err != nil {
		return &Error{Op: op, Code: CodePageError, Message: "unexpected value from the page", Err: err}
	}
	return nil
}

func exceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
	}
	return msg
}

// callOn runs fn (a JavaScript function source) with this bound to the
// element and args as its arguments, and decodes the returned JSON value.
func (p *Page) callOn(ctx context.Context, op string, node cdp.BackendNodeID, fn string, out any, args ...any) error {
	obj, err := cdp.Call(ctx, p.s, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node})
	if err != nil {
		return p.nodeErr(op, err)
	}
	if obj.Object == nil || obj.Object.ObjectID == "" {
		return &Error{Op: op, Code: CodeNotFound, Message: "the element has no JavaScript object"}
	}
	defer p.release(ctx, obj.Object.ObjectID)
	var cargs []*runtime.CallArgument
	for _, a := range args {
		raw, err := json.Marshal(a)
		if err != nil {
			return invalidInput(op, "argument cannot be encoded: "+err.Error())
		}
		cargs = append(cargs, &runtime.CallArgument{Value: raw})
	}
	t := true
	res, err := cdp.Call(ctx, p.s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn, ObjectID: obj.Object.ObjectID, Arguments: cargs, ReturnByValue: &t, AwaitPromise: &t,
	})
	if err != nil {
		return wrap(op, err)
	}
	return pageValue(op, res.Result, res.ExceptionDetails, out)
}

// release frees a remote object in the page; best effort, skipped when ctx is
// done (the object only holds page memory until the document goes away).
func (p *Page) release(ctx context.Context, id runtime.RemoteObjectID) {
	if ctx.Err() == nil {
		_, _ = cdp.Call(ctx, p.s, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: id})
	}
}

// Target names an element: Ref (from Snapshot, "e<backendDOMNodeId>") or a
// CSS Selector evaluated in the main document. Ref wins when both are set.
type Target struct {
	Ref      string `json:"ref,omitempty"`
	Selector string `json:"selector,omitempty"`
}

func (t Target) empty() bool { return t.Ref == "" && t.Selector == "" }

func (t Target) String() string {
	if t.Ref != "" {
		return "ref " + t.Ref
	}
	return "selector " + strconv.Quote(t.Selector)
}

// RefPrefix starts every element ref; the rest is the CDP backendDOMNodeId
// (DOM domain), which the browser keeps stable for the node's lifetime and
// across DevTools sessions, so a ref from one tool call is valid in the next.
const RefPrefix = "e"

// Ref returns the element ref of a backend DOM node id.
func Ref(id cdp.BackendNodeID) string { return RefPrefix + strconv.FormatInt(int64(id), 10) }

// ParseRef returns the backend DOM node id of a ref.
func ParseRef(ref string) (cdp.BackendNodeID, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(ref), RefPrefix), 10, 64)
	if err != nil || n <= 0 || !strings.HasPrefix(strings.TrimSpace(ref), RefPrefix) {
		return 0, fmt.Errorf("tools: malformed ref %q: want %s<number> from a snapshot", ref, RefPrefix)
	}
	return cdp.BackendNodeID(n), nil
}

// FrameRefPrefix starts the ref of an element in a cross-site frame
// (read through the frame's own target): FrameRefPrefix, the first
// frameKeyLen hex digits of the frame's target id in lower case, then the
// element's Ref in that frame's process, e.g. "f3a9c01b2e42". Backend node
// ids of two processes may be equal; the frame key keeps the refs apart.
const FrameRefPrefix = "f"

// frameKeyLen is the length of a frame ref's frame key.
const frameKeyLen = 8

// frameRef returns the ref of node id in the cross-site frame whose target
// id is target.
func frameRef(target string, id cdp.BackendNodeID) string {
	return FrameRefPrefix + frameKey(target) + Ref(id)
}

// frameKey is the frame key of a frame ref for target id target.
func frameKey(target string) string {
	k := strings.ToLower(target)
	if len(k) > frameKeyLen {
		k = k[:frameKeyLen]
	}
	return k
}

// parseAnyRef returns the frame key ("" for the main process) and backend
// node id of a ref or a frame ref.
func parseAnyRef(ref string) (string, cdp.BackendNodeID, error) {
	r := strings.TrimSpace(ref)
	if !strings.HasPrefix(r, FrameRefPrefix) {
		id, err := ParseRef(r)
		return "", id, err
	}
	body := r[len(FrameRefPrefix):]
	if len(body) <= frameKeyLen || strings.Trim(body[:frameKeyLen], "0123456789abcdef") != "" {
		return "", 0, fmt.Errorf("tools: malformed ref %q: want %s<number> or %s<8 hex digits>%s<number> from a snapshot", ref, RefPrefix, FrameRefPrefix, RefPrefix)
	}
	id, err := ParseRef(body[frameKeyLen:])
	if err != nil {
		return "", 0, fmt.Errorf("tools: malformed ref %q: want %s<number> or %s<8 hex digits>%s<number> from a snapshot", ref, RefPrefix, FrameRefPrefix, RefPrefix)
	}
	return body[:frameKeyLen], id, nil
}

// resolve finds the element named by t and returns its backend node id.
func (p *Page) resolve(ctx context.Context, op string, t Target) (cdp.BackendNodeID, error) {
	if t.Ref != "" {
		id, err := ParseRef(t.Ref)
		if err != nil {
			return 0, invalidInput(op, err.Error())
		}
		if _, err := cdp.Call(ctx, p.s, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: id}); err != nil {
			return 0, p.nodeErr(op, err)
		}
		return id, nil
	}
	if t.Selector == "" {
		return 0, invalidInput(op, "ref or selector is required")
	}
	sel, _ := json.Marshal(t.Selector)
	f := false
	res, err := cdp.Call(ctx, p.s, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "document.querySelector(" + string(sel) + ")", ReturnByValue: &f,
	})
	if err != nil {
		return 0, wrap(op, err)
	}
	if res.ExceptionDetails != nil {
		return 0, invalidInput(op, "bad selector: "+exceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return 0, &Error{Op: op, Code: CodeNotFound, Message: "no element matches " + t.String()}
	}
	defer p.release(ctx, res.Result.ObjectID)
	node, err := cdp.Call(ctx, p.s, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		return 0, p.nodeErr(op, err)
	}
	if node.Node == nil || node.Node.BackendNodeID == 0 {
		return 0, &Error{Op: op, Code: CodeNotFound, Message: "no element matches " + t.String()}
	}
	return node.Node.BackendNodeID, nil
}

// nodeErr maps a DOM-domain protocol error about a node to CodeNotFound
// (Chrome answers -32000 "No node with given id found" for a stale id).
func (p *Page) nodeErr(op string, err error) error {
	return elementErr(op, "the element is gone (stale ref?)", err)
}

// elementErr is the error of a command about an element: the browser's
// answer (a protocol error) is CodeNotFound with msg; any other failure keeps
// its own class (a transport failure is never reported as a missing element).
func elementErr(op, msg string, err error) error {
	if errors.Is(err, browserbackend.ErrProtocol) {
		return &Error{Op: op, Code: CodeNotFound, Message: msg, Err: err}
	}
	return wrap(op, err)
}

// centre scrolls the element into view and returns the centre of its content
// box in CSS pixels of the viewport (DOM.scrollIntoViewIfNeeded,
// DOM.getBoxModel).
func (p *Page) centre(ctx context.Context, op string, node cdp.BackendNodeID) (x, y float64, err error) {
	if _, err := cdp.Call(ctx, p.s, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node}); err != nil {
		return 0, 0, p.nodeErr(op, err)
	}
	box, err := cdp.Call(ctx, p.s, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: node})
	if err != nil {
		return 0, 0, elementErr(op, "the element has no box (hidden or detached)", err)
	}
	q := box.Model.Content
	if len(q) < 8 {
		q = box.Model.Border
	}
	if len(q) < 8 {
		return 0, 0, &Error{Op: op, Code: CodeNotFound, Message: "the element has no box (hidden or detached)"}
	}
	for i := 0; i < 8; i += 2 {
		x += q[i]
		y += q[i+1]
	}
	return math.Round(x/4*100) / 100, math.Round(y/4*100) / 100, nil
}

func (p *Page) mouse(ctx context.Context, op string, params input.DispatchMouseEventParams) error {
	_, err := cdp.Call(ctx, p.s, input.DispatchMouseEvent, params)
	return wrap(op, err)
}
