package recorder

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/textcap"
)

// Attribute keys of the spans.
const (
	AttrConversation = attribute.Key("browserchain.conversation")
	AttrCall         = attribute.Key("browserchain.call")
	AttrOp           = attribute.Key("browserchain.op")
	AttrBackend      = attribute.Key("browserchain.backend")
	AttrTab          = attribute.Key("browserchain.tab")
	AttrCode         = attribute.Key("browserchain.code")
	AttrStage        = attribute.Key("browserchain.attempt.stage")
	AttrReason       = attribute.Key("browserchain.attempt.reason")
	AttrRemembered   = attribute.Key("browserchain.attempt.remembered")
	AttrYielded      = attribute.Key("browserchain.attempt.yielded")
	AttrFailover     = attribute.Key("browserchain.attempt.failover")
	AttrMethod       = attribute.Key("cdp.method")
	AttrParamsBytes  = attribute.Key("cdp.params_bytes")
	AttrResultBytes  = attribute.Key("cdp.result_bytes")
)

// maxErrorBytes caps an error's text in the record.
const maxErrorBytes = 512

// Call records one tool call. Its methods are safe for concurrent use and do
// nothing on a nil *Call, so a caller records without checking whether
// recording is on. End finishes it; nothing is recorded after End.
type Call struct {
	r     *Recorder
	c     *convo
	num   uint64
	op    string
	start time.Time
	span  trace.Span // nil without a tracer

	sensitive atomic.Bool
	firstCmd  atomic.Int64 // UnixNano of the first command's start; 0 before it
	ended     atomic.Bool

	mu      sync.Mutex
	backend string
	tab     string
}

// Begin starts recording a tool call of conversation conv. The returned ctx
// carries the call's span (when r has a TracerProvider): the call's
// commands must run under it for their spans to be its children. On a nil r
// it returns ctx and a nil *Call.
func (r *Recorder) Begin(ctx context.Context, conv, op string) (context.Context, *Call) {
	if r == nil {
		return ctx, nil
	}
	c := r.convo(conv)
	call := &Call{r: r, c: c, num: c.nextCall(), op: op, start: time.Now()}
	if r.tracer != nil {
		ctx, call.span = r.tracer.Start(ctx, "tool "+op, trace.WithTimestamp(call.start),
			trace.WithAttributes(AttrConversation.String(conv), AttrOp.String(op), AttrCall.Int64(int64(call.num))))
	}
	return ctx, call
}

// Sensitive marks the call's commands as carrying secrets: none of their
// params is recorded.
func (c *Call) Sensitive() {
	if c != nil {
		c.sensitive.Store(true)
	}
}

func (c *Call) push(e Entry) {
	if c.ended.Load() {
		return
	}
	e.Call = c.num
	e.Op = c.op
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	c.c.push(e)
}

// Served records the selection that served the call: the backend that
// answered, its tab and every attempt in order. An attempt followed by
// another is marked Failover when it failed (construction or send) or when
// it was the conversation's remembered backend, gone at selection (a skip
// that did not yield). Attempt spans are laid out
// one after another from the call's first command, each as long as its
// Attempt.Elapsed.
func (c *Call) Served(backend browserbackend.Kind, tab string, attempts []browserbackend.Attempt) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.backend, c.tab = string(backend), tab
	c.mu.Unlock()
	at := c.start
	if n := c.firstCmd.Load(); n != 0 {
		at = time.Unix(0, n)
	}
	for i := range attempts {
		a := attempts[i]
		a.Err = nil
		failover := i < len(attempts)-1 && movedOn(a)
		c.push(Entry{Time: at, Type: TypeAttempt, Backend: string(a.Kind), Duration: a.Elapsed, Attempt: &a, Failover: failover})
		if c.r.tracer != nil {
			c.attemptSpan(at, a, failover)
		}
		at = at.Add(a.Elapsed)
	}
}

// movedOn reports whether the selection left attempt a for another because
// a failed or, remembered, was gone.
func movedOn(a browserbackend.Attempt) bool {
	switch a.Stage {
	case browserbackend.StageSuccess:
		return false
	case browserbackend.StageCandidateSelection:
		return a.Remembered && !a.Yielded
	}
	return true
}

func (c *Call) attemptSpan(at time.Time, a browserbackend.Attempt, failover bool) {
	ctx := trace.ContextWithSpan(context.Background(), c.span)
	_, sp := c.r.tracer.Start(ctx, "attempt "+string(a.Kind), trace.WithTimestamp(at),
		trace.WithAttributes(AttrBackend.String(string(a.Kind)), AttrStage.String(string(a.Stage)),
			AttrReason.String(a.Reason), AttrCode.String(a.Code), AttrRemembered.Bool(a.Remembered),
			AttrYielded.Bool(a.Yielded), AttrFailover.Bool(failover)))
	if a.Stage != browserbackend.StageSuccess && a.Stage != browserbackend.StageCandidateSelection {
		sp.SetStatus(codes.Error, a.Code)
	}
	sp.End(trace.WithTimestamp(at.Add(a.Elapsed)))
}

// Guard records a decision of the browser policy.
func (c *Call) Guard(d GuardDecision) {
	if c == nil {
		return
	}
	c.push(Entry{Type: TypeGuard, Guard: &d, Code: d.Code})
	if c.span != nil {
		c.span.AddEvent("guard", trace.WithAttributes(attribute.Bool("allowed", d.Allowed),
			attribute.String("code", d.Code), attribute.String("rule", d.Rule), attribute.String("param", d.Param)))
	}
}

// Event records something the page did during the call.
func (c *Call) Event(ev PageEvent) {
	if c == nil {
		return
	}
	ev.Detail = textcap.Cut(ev.Detail, maxErrorBytes)
	c.push(Entry{Type: TypeEvent, Event: &ev})
	if c.span != nil {
		c.span.AddEvent("page "+ev.Type, trace.WithAttributes(attribute.String("handled", ev.Handled)))
	}
}

// Screenshot records a screenshot the call took. When s.Data is nil and the
// file at s.Path is at most Options.MaxShotBytes, its bytes are read into
// the record; a file that cannot be read is referenced only.
func (c *Call) Screenshot(s Shot) {
	if c == nil {
		return
	}
	limit := c.r.opts.MaxShotBytes
	if s.Data == nil && s.Path != "" && limit > 0 && s.Size > 0 && s.Size <= int64(limit) {
		if b, err := os.ReadFile(s.Path); err == nil && len(b) <= limit {
			s.Data = b
		}
	}
	if len(s.Data) > limit {
		s.Data = nil
	}
	c.push(Entry{Type: TypeScreenshot, Shot: &s})
	if c.span != nil {
		c.span.AddEvent("screenshot", trace.WithAttributes(attribute.String("path", s.Path),
			attribute.String("sha256", s.SHA256), attribute.Int64("size", s.Size)))
	}
}

// End records the call's outcome: nil err is "ok", else "error" with code
// (the tool's error code) and err's text. It ends the call's span. Calls
// after End record nothing.
func (c *Call) End(code string, err error) {
	if c == nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	e := Entry{Time: c.start, Type: TypeCall, Duration: now.Sub(c.start), Backend: c.backend, Tab: c.tab, Outcome: "ok"}
	c.mu.Unlock()
	if err != nil {
		e.Outcome, e.Code, e.Error = "error", code, textcap.Cut(err.Error(), maxErrorBytes)
	}
	c.push(e)
	c.ended.Store(true)
	if c.span != nil {
		c.span.SetAttributes(AttrBackend.String(e.Backend), AttrTab.String(e.Tab))
		if err != nil {
			c.span.SetAttributes(AttrCode.String(code))
			c.span.SetStatus(codes.Error, code)
		}
		c.span.End(trace.WithTimestamp(now))
	}
}
