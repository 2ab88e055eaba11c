package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

func historyText(r tools.HistoryResult) string {
	s := fmt.Sprintf("Done: the page is %s (%q, backend %s)", r.URL, r.Title, r.Backend)
	if r.StillLoading {
		s += ", still loading"
	}
	return s + ". Take a new browser_snapshot to read it."
}

// registerPageTools adds history, evaluate, console, network, forms, drag,
// PDF and viewport tools.
func (s *Server) registerPageTools(srv *mcp.Server) {
	add(s, srv, toolDef[HistoryArgs, tools.HistoryResult]{
		name: "browser_history", title: "Back, forward, reload",
		desc: "Go back or forward in the tab's history, or reload; waits for the page to load.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a HistoryArgs) (tools.HistoryResult, error) {
			in := tools.HistoryInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs}
			switch a.Step {
			case "back":
				return s.opts.Tools.Act().GoBack(ctx, inv, in)
			case "forward":
				return s.opts.Tools.Act().GoForward(ctx, inv, in)
			case "reload":
				return s.opts.Tools.Act().Reload(ctx, inv, in)
			}
			return tools.HistoryResult{}, &tools.Error{Op: "history", Code: tools.CodeInvalidInput, Message: "step must be back, forward or reload"}
		},
		text:    historyText,
		backend: func(r tools.HistoryResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[EvaluateArgs, tools.EvaluateResult]{
		name: "browser_evaluate", title: "Evaluate JavaScript",
		desc: "Run a JavaScript function in the page (or on an element) and return its value as JSON.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a EvaluateArgs) (tools.EvaluateResult, error) {
			return s.opts.Tools.Dev().Evaluate(ctx, inv, tools.EvaluateInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Function: a.Function, Target: a.target(), MaxChars: a.MaxChars})
		},
		text: func(r tools.EvaluateResult) string {
			if r.Truncated {
				return fmt.Sprintf("%s\n(cut at %d of %d characters)", r.JSON, len([]rune(r.JSON)), r.Chars)
			}
			return r.JSON
		},
		backend: func(r tools.EvaluateResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ConsoleArgs, tools.ConsoleResult]{
		name: "browser_console_messages", title: "Console messages", readOnly: true,
		desc: "Console messages, uncaught errors and browser warnings of the current page.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ConsoleArgs) (tools.ConsoleResult, error) {
			return s.opts.Tools.Dev().Console(ctx, inv, tools.ConsoleInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Level: a.Level, Search: a.Search, Limit: a.Limit})
		},
		text: func(r tools.ConsoleResult) string {
			var b strings.Builder
			fmt.Fprintf(&b, "%d of %d matching messages:\n", len(r.Messages), r.Matched)
			for _, m := range r.Messages {
				fmt.Fprintf(&b, "[%s] %s", m.Level, m.Text)
				if m.URL != "" {
					fmt.Fprintf(&b, " (%s:%d)", m.URL, m.Line)
				}
				b.WriteByte('\n')
			}
			return b.String()
		},
		backend: func(r tools.ConsoleResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[NetworkArgs, tools.NetworkResult]{
		name: "browser_network_requests", title: "Network requests", readOnly: true,
		desc: "Requests of the current page: URL, type, status, timing, size.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a NetworkArgs) (tools.NetworkResult, error) {
			return s.opts.Tools.Dev().Network(ctx, inv, tools.NetworkInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Type: a.Type, URLContains: a.URLContains, Limit: a.Limit})
		},
		text: func(r tools.NetworkResult) string {
			var b strings.Builder
			fmt.Fprintf(&b, "%d of %d matching requests:\n", len(r.Requests), r.Matched)
			for _, q := range r.Requests {
				fmt.Fprintf(&b, "%s %s → %d (%.0f ms, %d bytes)\n", q.Type, q.URL, q.Status, q.Duration, q.TransferSize)
			}
			return b.String()
		},
		backend: func(r tools.NetworkResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[FillFormArgs, tools.FillFormResult]{
		name: "browser_fill_form", title: "Fill form",
		desc: "Fill text fields, selects, checkboxes and radios in one call.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a FillFormArgs) (tools.FillFormResult, error) {
			return s.opts.Tools.Act().FillForm(ctx, inv, a.input())
		},
		text: func(r tools.FillFormResult) string {
			return fmt.Sprintf("Done: filled %d fields (backend %s). Take a new browser_snapshot to check the form.", len(r.Fields), r.Backend)
		},
		backend: func(r tools.FillFormResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[DragArgs, tools.DragResult]{
		name: "browser_drag", title: "Drag and drop",
		desc: "Drag one element onto another (HTML drag and drop or pointer drag).",
		call: func(ctx context.Context, inv browserbackend.Invocation, a DragArgs) (tools.DragResult, error) {
			return s.opts.Tools.Act().Drag(ctx, inv, tools.DragInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				From: a.From.target(), To: a.To.target()})
		},
		text: func(r tools.DragResult) string {
			return fmt.Sprintf("Done: dragged from (%.0f, %.0f) to (%.0f, %.0f) (backend %s).", r.FromX, r.FromY, r.ToX, r.ToY, r.Backend) + effectsText(r.Effects)
		},
		backend: func(r tools.DragResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[PDFArgs, tools.PDFResult]{
		name: "browser_pdf_save", title: "Save as PDF", readOnly: true,
		desc: "Save the page as a PDF file on the server.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a PDFArgs) (tools.PDFResult, error) {
			return s.opts.Tools.Dev().PDF(ctx, inv, tools.PDFInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Landscape: a.Landscape,
				PrintBackground: a.PrintBackground, Scale: a.Scale, PaperWidth: a.PaperWidth, PaperHeight: a.PaperHeight, PageRanges: a.PageRanges})
		},
		text: func(r tools.PDFResult) string {
			return fmt.Sprintf("Saved %s as a PDF: %s (%d bytes, sha256 %s, backend %s).", r.URL, r.Path, r.Size, r.SHA256, r.Backend)
		},
		backend: func(r tools.PDFResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[TabsArgs, tools.TabsResult]{
		name: "browser_tabs", title: "Tabs",
		desc: "List the conversation's tabs (its popups too), open, select or close one.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a TabsArgs) (tools.TabsResult, error) {
			return s.tabs(ctx, inv, a)
		},
		text: func(r tools.TabsResult) string {
			var b strings.Builder
			fmt.Fprintf(&b, "%d tabs (backend %s):\n", len(r.Tabs), r.Backend)
			for _, t := range r.Tabs {
				mark := " "
				if t.Current {
					mark = "*"
				}
				fmt.Fprintf(&b, "%s %s %q %s\n", mark, t.ID, t.Title, t.URL)
			}
			return b.String()
		},
		backend: func(r tools.TabsResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ResizeArgs, tools.ViewportResult]{
		name: "browser_resize", title: "Resize viewport",
		desc: "Set the viewport size for the rest of the conversation.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ResizeArgs) (tools.ViewportResult, error) {
			return s.opts.Tools.Dev().Resize(ctx, inv, tools.ViewportInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Width: a.Width, Height: a.Height, DeviceScale: a.DeviceScale, Mobile: a.Mobile})
		},
		text: func(r tools.ViewportResult) string {
			return fmt.Sprintf("Done: the viewport is %d×%d CSS pixels at device scale %g (backend %s).", r.Width, r.Height, r.DeviceScale, r.Backend)
		},
		backend: func(r tools.ViewportResult) browserbackend.Kind { return r.Backend },
	})
}

// tabs runs one browser_tabs action and lists the tabs after it.
func (s *Server) tabs(ctx context.Context, inv browserbackend.Invocation, a TabsArgs) (tools.TabsResult, error) {
	tt := s.opts.Tools.Tabs()
	var err error
	switch a.Action {
	case "", "list":
	case "new":
		_, err = tt.Open(ctx, inv, tools.OpenTabInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, URL: a.URL})
	case "select":
		_, err = tt.Select(ctx, inv, tools.SelectTabInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, TabID: a.TabID})
	case "close":
		_, err = tt.Close(ctx, inv, tools.CloseTabInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, TabID: a.TabID})
	default:
		return tools.TabsResult{}, &tools.Error{Op: "tabs", Code: tools.CodeInvalidInput, Message: "action must be list, new, select or close"}
	}
	if err != nil {
		return tools.TabsResult{}, err
	}
	return tt.List(ctx, inv, tools.TabsInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs})
}
