package tools

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domsnapshot"
	"github.com/chromedp/cdproto/target"
)

// Bounds of reading cross-site frames.
const (
	// maxFrameNesting bounds the cross-site frames read inside each other.
	maxFrameNesting = 4
	// frameDetachTimeout bounds the detach from a frame's session, sent
	// whatever became of the call.
	frameDetachTimeout = 2 * time.Second
)

// ownerAt names an iframe element of a DOM snapshot: its document's index
// and its node's.
type ownerAt struct {
	doc  int
	node int32
}

// crossFrame is what became of a cross-site frame: the index of its
// document among the snapshot's, or why it was not read.
type crossFrame struct {
	doc int
	why string
}

// frameSessions makes the session of an attached frame target: a
// *browserbackend.Client does (Client.Session).
type frameSessions interface {
	Session(sessionID string) *browserbackend.SessionView
}

// crossReader reads the documents of the cross-site frames of a DOM
// snapshot, each through its own target: Target.getTargets (once) makes
// the frames' targets, DOM.describeNode names the
// iframe's frame (its target id), Target.attachToTarget (flat) gives a
// session to it, DOMSnapshot.captureSnapshot reads it there; the session is
// detached when the snapshot is done. Frames are read at most
// snapshotFrameFetches at once, those inside them in turn.
type crossReader struct {
	p      *Page
	frames map[ownerAt]crossFrame
	listed bool // the iframe targets were listed
	// detach ends the attached sessions.
	mu     sync.Mutex
	detach []func()
}

// read reads the cross-site frames of docs[from:] (read from session s,
// level frames deep), appends their documents to docs and returns them.
func (c *crossReader) read(ctx context.Context, s cdp.Session, docs []*domDoc, from, level int) []*domDoc {
	owners := crossOwners(docs, from)
	if len(owners) == 0 {
		return docs
	}
	if c.frames == nil {
		c.frames = map[ownerAt]crossFrame{}
	}
	if !c.listed {
		// The browser makes a frame's target on demand: listing the
		// iframe targets makes them, so that they can be attached to.
		c.listed = true
		_, err := cdp.Call(ctx, s, target.GetTargets, target.GetTargetsParams{Filter: target.Filter{{Type: "iframe"}}})
		if err != nil {
			why := frameWhy("the backend could not list the frames' targets", err)
			for _, o := range owners {
				c.frames[o] = crossFrame{doc: -1, why: why}
			}
			return docs
		}
	}
	if level >= maxFrameNesting {
		for _, o := range owners {
			c.frames[o] = crossFrame{doc: -1, why: "it is nested too deep in other cross-site frames"}
		}
		return docs
	}
	type answer struct {
		snap   domsnapshot.CaptureSnapshotResult
		target string
		s      cdp.Session
		why    string
	}
	answers := make([]answer, len(owners))
	var wg sync.WaitGroup
	sem := make(chan struct{}, snapshotFrameFetches)
	for k, o := range owners {
		a := &answers[k]
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				a.why = "the deadline passed"
				return
			}
			defer func() { <-sem }()
			a.target, a.s, a.why = c.attach(ctx, s, docs[o.doc].backend[o.node])
			if a.why == "" {
				if err := a.s.Call(ctx, domsnapshot.CommandCaptureSnapshot,
					domsnapshot.CaptureSnapshotParams{ComputedStyles: domStyles}, &a.snap); err != nil {
					a.why = frameWhy("the frame's session did not answer", err)
				}
			}
		})
	}
	wg.Wait()
	for k, o := range owners {
		a := &answers[k]
		if a.why != "" || len(a.snap.Documents) == 0 {
			if a.why == "" {
				a.why = "its snapshot holds no document"
			}
			c.frames[o] = crossFrame{doc: -1, why: a.why}
			continue
		}
		start := len(docs)
		docs = appendDOMDocs(docs, &a.snap, a.target)
		c.frames[o] = crossFrame{doc: start}
		docs = c.read(ctx, a.s, docs, start, level+1)
	}
	return docs
}

// attach returns the target id of the frame of iframe element node (in the
// process s reaches) and a session attached to it, or why not.
func (c *crossReader) attach(ctx context.Context, s cdp.Session, node cdp.BackendNodeID) (string, cdp.Session, string) {
	fs, ok := c.p.s.(frameSessions)
	if !ok {
		return "", nil, "this session cannot address a frame's own target"
	}
	desc, err := cdp.Call(ctx, s, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: node})
	if err != nil {
		return "", nil, frameWhy("the iframe could not be described", err)
	}
	if desc.Node == nil || desc.Node.FrameID == "" {
		return "", nil, "the iframe has no frame"
	}
	// Attached through the page's own session, which every backend routes
	// (the frame's target id is the browser's).
	att, err := cdp.Call(ctx, c.p.s, target.AttachToTarget, target.AttachToTargetParams{TargetID: target.ID(desc.Node.FrameID), Flatten: new(true)})
	if err != nil {
		return "", nil, frameWhy("the backend could not attach to the frame's target", err)
	}
	c.detachLater(ctx, c.p.s, att.SessionID)
	return string(desc.Node.FrameID), fs.Session(string(att.SessionID)), ""
}

// detachLater has close detach session id, through s.
func (c *crossReader) detachLater(ctx context.Context, s cdp.Session, id target.SessionID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detach = append(c.detach, func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), frameDetachTimeout)
		defer cancel()
		_, _ = cdp.Call(dctx, s, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: id})
	})
}

// close detaches every session read attached, all at once.
func (c *crossReader) close() {
	var wg sync.WaitGroup
	for _, d := range c.detach {
		wg.Go(d)
	}
	wg.Wait()
}

// frameWhy says why a frame was not read: what failed, and the backend's
// reason when it refused (a backend that sends commands on its page's
// session only, a browser that does not let it attach).
func frameWhy(what string, err error) string {
	var be *browserbackend.Error
	switch {
	case errors.As(err, &be) && be.Code == browserbackend.CodeNotSupported:
		return "the " + string(be.Backend) + " backend sends commands on its page's session only"
	case errors.As(err, &be) && be.Class == browserbackend.ClassProtocol:
		return what + ": " + be.Message
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, browserbackend.ErrTimeout):
		return "the deadline passed"
	}
	return what
}

// crossOwners returns the iframe elements of docs[from:] that are rendered
// but whose document the answer does not hold: cross-site frames, each in
// a process of its own.
func crossOwners(docs []*domDoc, from int) []ownerAt {
	var out []ownerAt
	for di := from; di < len(docs); di++ {
		d := docs[di]
		for i := range d.typ {
			if d.typ[i] != 1 || !d.live[i] {
				continue
			}
			if tag := d.tag(int32(i)); tag != "IFRAME" && tag != "FRAME" {
				continue
			}
			if _, ok := d.contentDoc[int32(i)]; !ok {
				out = append(out, ownerAt{di, int32(i)})
			}
		}
	}
	return out
}
