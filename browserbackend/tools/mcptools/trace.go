package mcptools

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// TraceURIPrefix starts the URI of a conversation's trace page (HTML), as
// browser_trace links it: the prefix and the path-escaped conversation id.
const TraceURIPrefix = "browserchain://traces/"

// Bounds of browser_trace's entries.
const (
	DefaultTraceEntries = 200
	MaxTraceEntries     = 5000
)

// TraceArgs is the browser_trace input.
type TraceArgs struct {
	Format string `json:"format,omitempty" jsonschema:"json (default): the conversation's latest recorded entries as structured content; html: a resource link to the whole record as one HTML page (a timeline with the screenshots)."`
	Last   int    `json:"last,omitempty" jsonschema:"How many of the latest entries json returns, 0 to 5000; 0 or omitted means 200."`
	Common
}

// TraceResult is the structured content of browser_trace.
type TraceResult struct {
	Conversation string         `json:"conversation"`
	Stats        recorder.Stats `json:"stats"`
	// Entries are the latest recorded entries, oldest first, without
	// screenshot bytes (their path and hash stay); empty for html.
	Entries []recorder.Entry `json:"entries,omitempty"`
	// HTML is the trace page's resource URI (TraceURIPrefix…) for html.
	HTML string `json:"html,omitempty"`
}

// registerTrace adds browser_trace and the trace page resource template
// when the Tools has a recorder (tools.Options.Recorder); nothing
// otherwise.
func (s *Server) registerTrace(srv *mcp.Server) {
	rec := s.opts.Tools.Recorder()
	if rec == nil {
		return
	}
	add(s, srv, toolDef[TraceArgs, TraceResult]{
		name: "browser_trace", title: "Browser trace", readOnly: true,
		desc: "Show what the browser tools did in this conversation: each call with the browser that served it, the browsers tried before " +
			"and why they failed (failover), the CDP commands, the browser policy's decisions, dialogs and screenshots. Typed text and credentials are never recorded.",
		inspect: func(_ context.Context, st *session, inv browserbackend.Invocation, a TraceArgs) (TraceResult, error) {
			if !s.usedBy(st, inv.ConversationID) {
				return TraceResult{}, &tools.Error{Op: "trace", Code: tools.CodeInvalidInput,
					Message: "a session reads the trace of its own conversation or of one its browser calls named, not of " + strconv.Quote(inv.ConversationID)}
			}
			return traceOf(rec, inv.ConversationID, a)
		},
		content: func(s *Server, st *session, r TraceResult) ([]mcp.Content, error) {
			text := &mcp.TextContent{Text: traceText(r)}
			if r.HTML == "" {
				return []mcp.Content{text}, nil
			}
			s.addResource(st, tracePage(rec, r))
			return []mcp.Content{text, &mcp.ResourceLink{URI: r.HTML, Name: "trace-" + r.Conversation,
				Title: "Trace of conversation " + r.Conversation, MIMEType: "text/html"}}, nil
		},
		backend: func(TraceResult) browserbackend.Kind { return "" },
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "trace", Title: "Browser trace", MIMEType: "text/html",
		Description: "The recorded browser tool calls of a conversation, as one HTML page, linked by browser_trace in this session.",
		URITemplate: TraceURIPrefix + "{conversation}",
	}, notProduced)
}

// tracePage is the resource of r's trace page: the conversation's record
// rendered at each read.
func tracePage(rec *recorder.Recorder, r TraceResult) producedFile {
	conv, uri := r.Conversation, r.HTML
	return producedFile{
		res: &mcp.Resource{URI: uri, Name: "trace-" + conv, Title: "Trace of conversation " + conv, MIMEType: "text/html"},
		render: func() (*mcp.ReadResourceResult, error) {
			if _, ok := rec.Stats(conv); !ok {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			var page bytes.Buffer
			if err := rec.WriteHTML(&page, conv); err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/html", Text: page.String()}}}, nil
		},
	}
}

// traceOf is browser_trace's result for conversation conv.
func traceOf(rec *recorder.Recorder, conv string, a TraceArgs) (TraceResult, error) {
	const op = "trace"
	if a.Last < 0 || a.Last > MaxTraceEntries {
		return TraceResult{}, &tools.Error{Op: op, Code: tools.CodeInvalidInput, Message: fmt.Sprintf("last must be 0–%d", MaxTraceEntries)}
	}
	st, _ := rec.Stats(conv)
	res := TraceResult{Conversation: conv, Stats: st}
	switch a.Format {
	case "html":
		res.HTML = TraceURIPrefix + url.PathEscape(conv)
		return res, nil
	case "", "json":
	default:
		return TraceResult{}, &tools.Error{Op: op, Code: tools.CodeInvalidInput, Message: "format must be json or html"}
	}
	last := a.Last
	if last == 0 {
		last = DefaultTraceEntries
	}
	es := rec.Entries(conv)
	es = es[max(0, len(es)-last):]
	for i := range es {
		if sh := es[i].Shot; sh != nil && sh.Data != nil {
			cp := *sh
			cp.Data = nil
			es[i].Shot = &cp
		}
	}
	res.Entries = es
	return res, nil
}

// traceText summarises a trace for the model: one line per recorded call.
func traceText(r TraceResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Trace of conversation %s: %d calls recorded, %d entries kept (%d bytes)", r.Conversation, r.Stats.Calls, r.Stats.Entries, r.Stats.Bytes)
	if r.Stats.Dropped > 0 {
		fmt.Fprintf(&b, ", %d older entries dropped", r.Stats.Dropped)
	}
	b.WriteString(".")
	if r.HTML != "" {
		b.WriteString(" The whole record is the linked HTML page.")
		return b.String()
	}
	failovers := map[uint64][]string{}
	cmds := map[uint64]int{}
	for _, e := range r.Entries {
		switch {
		case e.Failover:
			failovers[e.Call] = append(failovers[e.Call], fmt.Sprintf("%s failed (%s)", e.Backend, e.Attempt.Code))
		case e.Type == recorder.TypeCDP:
			cmds[e.Call]++
		}
	}
	for _, e := range r.Entries {
		if e.Type != recorder.TypeCall {
			continue
		}
		fmt.Fprintf(&b, "\n#%d %s → %s: %s", e.Call, e.Op, e.Backend, e.Outcome)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		}
		fmt.Fprintf(&b, ", %d ms, %d commands", e.Duration.Milliseconds(), cmds[e.Call])
		if f := failovers[e.Call]; len(f) > 0 {
			b.WriteString("; failover: " + strings.Join(f, ", "))
		}
	}
	return b.String()
}
