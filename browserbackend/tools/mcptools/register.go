package mcptools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// ToolNames are the names of the tools Register adds, in registration order
// (the seed's names).
var ToolNames = []string{
	"browser_navigate", "browser_snapshot", "browser_screenshot", "browser_click", "browser_type",
	"browser_hover", "browser_scroll", "browser_press_key", "browser_select_option", "browser_wait_for",
	"browser_extract", "browser_links", "browser_attach", "browser_detach", "browser_close", "browser_status",
	"browser_login", "browser_handle_dialog", "browser_file_upload",
	"browser_history", "browser_evaluate", "browser_console_messages", "browser_network_requests",
	"browser_fill_form", "browser_drag", "browser_pdf_save", "browser_resize", "browser_tabs",
	"browser_act", "browser_observe",
	"browser_save_context",
}

// args is what every argument type has: the Common properties.
type args interface{ common() Common }

// toolDef is one tool: its MCP description and how to run it.
type toolDef[A args, R any] struct {
	name, title, desc string
	readOnly          bool
	// progress makes the call report progress while it runs.
	progress func(A) string
	call     func(ctx context.Context, inv browserbackend.Invocation, a A) (R, error)
	// inspect, set instead of call, runs with the caller's session and
	// reads the conversation without acting in it: the call does not make
	// the conversation the session's.
	inspect func(ctx context.Context, st *session, inv browserbackend.Invocation, a A) (R, error)
	// content renders the result for the model; text is the default.
	content func(s *Server, st *session, r R) ([]mcp.Content, error)
	text    func(R) string
	backend func(R) browserbackend.Kind
}

// Register adds the browser tools (ToolNames) to srv, the screenshot
// resource template, and the resources of each session: every file a tool
// call wrote (a screenshot) is listed by that session's resources/list and
// read by its resources/read, and by no other session's. Register a
// Server on any number of MCP servers; their sessions share its
// conversations bookkeeping.
//
// Every tool's input schema is inferred from its argument type, with an
// enum on each closed set (browser_mode: the Selector's modes and aliases;
// wait_until; source), and has browser_mode, timeout_ms and
// conversation_id with short descriptions; browser_status's description
// explains them at length. The structured content is the tools package's
// result, or for browser_snapshot and browser_extract SnapshotSummary and
// ExtractSummary (the tree or text is the text content, sent once); no tool
// has an output schema. A failure is a tool error (IsError) whose text says
// what to do (errorText); a value outside an enum is refused by the schema,
// before any CDP command is sent.
func (s *Server) Register(srv *mcp.Server) {
	add(s, srv, toolDef[NavigateArgs, tools.NavigateResult]{
		name: "browser_navigate", title: "Navigate",
		desc:     "Load a URL in the conversation's page (the first opens it: on the user's Chrome, a tab of its own) and wait for it. Returns the final URL and title.",
		progress: func(a NavigateArgs) string { return "navigating to " + a.URL },
		call: func(ctx context.Context, inv browserbackend.Invocation, a NavigateArgs) (tools.NavigateResult, error) {
			return s.opts.Tools.Navigate(ctx, inv, tools.NavigateInput{BrowserMode: a.BrowserMode, URL: a.URL,
				TimeoutMs: a.TimeoutMs, NewTab: a.NewTab, UseActiveTab: a.UseActiveTab, WaitUntil: a.WaitUntil, SessionInput: a.input()})
		},
		text:    navigateText,
		backend: func(r tools.NavigateResult) browserbackend.Kind { return r.Backend },
	})
	addSummarized(s, srv, toolDef[SnapshotArgs, tools.SnapshotResult]{
		name: "browser_snapshot", title: "Page snapshot", readOnly: true,
		desc: "Read the page as an accessibility tree: role, name and ref (e.g. [ref=e42]) per element. Narrow it (interactive, search, ref, diff) to save tokens.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a SnapshotArgs) (tools.SnapshotResult, error) {
			return s.opts.Tools.Read().Snapshot(ctx, inv, tools.SnapshotInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, MaxNodes: a.MaxNodes, Source: a.Source,
				Ref: a.Ref, MaxDepth: a.MaxDepth, Interactive: a.Interactive, Search: a.Search, Diff: a.Diff})
		},
		text:    snapshotText,
		backend: func(r tools.SnapshotResult) browserbackend.Kind { return r.Backend },
	}, summarizeSnapshot)
	add(s, srv, toolDef[ScreenshotArgs, tools.ScreenshotResult]{
		name: "browser_screenshot", title: "Screenshot", readOnly: true,
		desc: "Capture the viewport (or full page, or an area) as a PNG, to see layout or images; browser_snapshot reads the page.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ScreenshotArgs) (tools.ScreenshotResult, error) {
			return s.opts.Tools.Read().Screenshot(ctx, inv, tools.ScreenshotInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Width: a.Width, Height: a.Height, FullPage: a.FullPage, Compact: a.Compact, AsFile: a.AsFile})
		},
		content: screenshotContent,
		backend: func(r tools.ScreenshotResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ElementArgs, tools.ActionResult]{
		name: "browser_click", title: "Click",
		desc: "Click an element at its centre, scrolled into view. A navigation it starts is waited for (new URL and title); a window it opened or a dialog it raised is reported.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ElementArgs) (tools.ActionResult, error) {
			return s.opts.Tools.Act().Click(ctx, inv, tools.ElementInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Target: a.target()})
		},
		text:    actionText("clicked"),
		backend: actionBackend,
	})
	add(s, srv, toolDef[TypeArgs, tools.ActionResult]{
		name: "browser_type", title: "Type text",
		desc: "Type text into an editable element; optionally clear it first and press Enter after.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a TypeArgs) (tools.ActionResult, error) {
			return s.opts.Tools.Act().Type(ctx, inv, tools.TypeInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Target: a.target(),
				Text: a.Text, Clear: a.Clear, Slowly: a.Slowly, Submit: a.Submit})
		},
		text:    actionText("typed into"),
		backend: actionBackend,
	})
	add(s, srv, toolDef[ElementArgs, tools.ActionResult]{
		name: "browser_hover", title: "Hover",
		desc: "Move the mouse over an element, e.g. to open a menu.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ElementArgs) (tools.ActionResult, error) {
			return s.opts.Tools.Act().Hover(ctx, inv, tools.ElementInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Target: a.target()})
		},
		text:    actionText("hovered over"),
		backend: actionBackend,
	})
	add(s, srv, toolDef[ScrollArgs, tools.ActionResult]{
		name: "browser_scroll", title: "Scroll",
		desc: "Scroll the page or an element: by delta_x/delta_y CSS pixels, an element into view, or (with nothing given) one screen down.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ScrollArgs) (tools.ActionResult, error) {
			return s.opts.Tools.Act().Scroll(ctx, inv, tools.ScrollInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Target: a.target(),
				DeltaX: a.DeltaX, DeltaY: a.DeltaY})
		},
		text:    actionText("scrolled"),
		backend: actionBackend,
	})
	add(s, srv, toolDef[PressKeyArgs, tools.ActionResult]{
		name: "browser_press_key", title: "Press key",
		desc: "Press a key or key combination (Enter, Escape, Tab, ArrowDown, Control+a …) in the focused element, or focus an element first.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a PressKeyArgs) (tools.ActionResult, error) {
			return s.opts.Tools.Act().PressKey(ctx, inv, tools.PressKeyInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Key: a.Key, Target: a.target()})
		},
		text:    actionText("pressed the key on"),
		backend: actionBackend,
	})
	add(s, srv, toolDef[HandleDialogArgs, tools.HandleDialogResult]{
		name: "browser_handle_dialog", title: "Handle dialog",
		desc: "Accept or dismiss the open JavaScript dialog (alert, confirm, prompt, beforeunload); until then the page is blocked and other tools report it.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a HandleDialogArgs) (tools.HandleDialogResult, error) {
			return s.opts.Tools.Act().HandleDialog(ctx, inv, tools.HandleDialogInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Accept: a.Accept, PromptText: a.PromptText})
		},
		text: func(tools.HandleDialogResult) string {
			return "Done: the dialog was answered. Take a new browser_snapshot if the page changed."
		},
		backend: func(r tools.HandleDialogResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[FileUploadArgs, tools.FileUploadResult]{
		name: "browser_file_upload", title: "Upload files",
		desc: "Set files on a file input (hidden ones by selector) or drop them on an element. Only files in the server's upload directory.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a FileUploadArgs) (tools.FileUploadResult, error) {
			return s.opts.Tools.Act().FileUpload(ctx, inv, tools.FileUploadInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Target: a.target(), Paths: a.Paths})
		},
		text: func(r tools.FileUploadResult) string {
			names := make([]string, len(r.Files))
			for i, f := range r.Files {
				names[i] = fmt.Sprintf("%s (%d bytes)", f.Name, f.Size)
			}
			how := "set on"
			switch {
			case r.Dropped:
				how = "dropped on"
			case r.Chooser:
				how = "chosen in the file chooser opened by"
			}
			return fmt.Sprintf("Done: %s %s %s (backend %s).", strings.Join(names, ", "), how, r.Ref, r.Backend)
		},
		backend: func(r tools.FileUploadResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[SelectOptionArgs, tools.SelectOptionResult]{
		name: "browser_select_option", title: "Select option",
		desc: "Select options of a <select> element by value or label.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a SelectOptionArgs) (tools.SelectOptionResult, error) {
			return s.opts.Tools.Act().SelectOption(ctx, inv, tools.SelectOptionInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Target: a.target(), Values: a.Values})
		},
		text: func(r tools.SelectOptionResult) string {
			return fmt.Sprintf("Selected %q (backend %s).", r.Selected, r.Backend) + effectsText(r.Effects)
		},
		backend: func(r tools.SelectOptionResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[WaitForArgs, tools.WaitForResult]{
		name: "browser_wait_for", title: "Wait for", readOnly: true,
		desc: "Wait until a CSS selector matches, a text shows, or a navigation has loaded (optionally at a URL containing url_contains); give exactly one.",
		progress: func(a WaitForArgs) string {
			switch {
			case a.Selector != "":
				return "waiting for selector " + a.Selector
			case a.Text != "":
				return "waiting for text"
			}
			return "waiting for a navigation"
		},
		call: func(ctx context.Context, inv browserbackend.Invocation, a WaitForArgs) (tools.WaitForResult, error) {
			return s.opts.Tools.Read().WaitFor(ctx, inv, tools.WaitForInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Selector: a.Selector, Text: a.Text, Navigation: a.Navigation, URLContains: a.URLContains})
		},
		text: func(r tools.WaitForResult) string {
			return fmt.Sprintf("Done waiting: %s matched at %s (backend %s).", r.Matched, r.URL, r.Backend)
		},
		backend: func(r tools.WaitForResult) browserbackend.Kind { return r.Backend },
	})
	addSummarized(s, srv, toolDef[ExtractArgs, tools.ExtractResult]{
		name: "browser_extract", title: "Extract text", readOnly: true,
		desc:    "Visible text of the page or of one element (by ref or CSS selector).",
		call:    s.extract,
		text:    extractText,
		backend: func(r tools.ExtractResult) browserbackend.Kind { return r.Backend },
	}, summarizeExtract)
	add(s, srv, toolDef[LinksArgs, tools.LinksResult]{
		name: "browser_links", title: "Links", readOnly: true,
		desc: "List the page's links (absolute URL and text), optionally only those containing a string; at most limit (default 50, at most 200).",
		call: func(ctx context.Context, inv browserbackend.Invocation, a LinksArgs) (tools.LinksResult, error) {
			return s.opts.Tools.Read().Links(ctx, inv, tools.LinksInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Contains: a.Contains, Limit: a.Limit})
		},
		text:    linksText,
		backend: func(r tools.LinksResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[AttachArgs, tools.AttachResult]{
		name: "browser_attach", title: "Attach",
		desc: "Pick the conversation's browser and page without changing it; report its URL and title.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a AttachArgs) (tools.AttachResult, error) {
			return s.opts.Tools.Attach(ctx, inv, tools.AttachInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				NewTab: a.NewTab, UseActiveTab: a.UseActiveTab})
		},
		text: func(r tools.AttachResult) string {
			return fmt.Sprintf("Attached to %s — %q (backend %s).", r.URL, r.Title, r.Backend)
		},
		backend: func(r tools.AttachResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ReleaseArgs, tools.ReleaseResult]{
		name: "browser_detach", title: "Detach",
		desc: "Release the conversation's hold on its browser: the tab stays open, and the next call picks a browser afresh.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ReleaseArgs) (tools.ReleaseResult, error) {
			return s.opts.Tools.Detach(ctx, inv, tools.ReleaseInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs})
		},
		text:    func(r tools.ReleaseResult) string { return releaseText("Detached", r) },
		backend: func(r tools.ReleaseResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[ReleaseArgs, tools.ReleaseResult]{
		name: "browser_close", title: "Close",
		desc: "Close what the conversation opened (its own tab or private page; never the user's tabs) and release its browser.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a ReleaseArgs) (tools.ReleaseResult, error) {
			res, err := s.opts.Tools.Close(ctx, inv, tools.ReleaseInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs})
			if err == nil {
				s.forgetNamed(inv.ConversationID) // closed: nothing is left for Close to release
			}
			return res, err
		},
		text:    func(r tools.ReleaseResult) string { return releaseText("Closed", r) },
		backend: func(r tools.ReleaseResult) browserbackend.Kind { return r.Backend },
	})
	add(s, srv, toolDef[StatusArgs, tools.StatusReport]{
		name: "browser_status", title: "Browser status", readOnly: true,
		desc: "Report which browsers are available, in which order auto tries them, and what the user can do to make a better one available. " +
			sharedText(s.opts.Tools.Selector()),
		call: func(ctx context.Context, inv browserbackend.Invocation, a StatusArgs) (tools.StatusReport, error) {
			return s.opts.Tools.Status(ctx, inv, tools.StatusInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs,
				Probe: a.Probe == nil || *a.Probe})
		},
		text:    statusText,
		backend: func(r tools.StatusReport) browserbackend.Kind { return "" },
	})
	add(s, srv, toolDef[LoginArgs, tools.LoginResult]{
		name: "browser_login", title: "Sign in",
		desc: "Sign in with a credential from the server's vault: fields take %username% or %password%, which the server fills in; " +
			"optionally click submit. Use it for passwords (browser_type refuses them); the credential is never returned.",
		call: func(ctx context.Context, inv browserbackend.Invocation, a LoginArgs) (tools.LoginResult, error) {
			return s.opts.Tools.Login(ctx, inv, a.input())
		},
		text:    loginText,
		backend: func(r tools.LoginResult) browserbackend.Kind { return r.Backend },
	})
	s.registerPageTools(srv)
	s.registerPlainTools(srv)
	s.registerSessionTools(srv)
	s.registerTrace(srv) // browser_trace, when the Tools records (trace.go)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "screenshot", Title: "Browser screenshot", MIMEType: "image/png",
		Description: "A PNG taken by browser_screenshot in this session.",
		URITemplate: ScreenshotURIPrefix + "{name}",
	}, notProduced)
	srv.AddReceivingMiddleware(s.resourcesMiddleware)
}

// add registers one tool whose structured content is the whole result.
func add[A args, R any](s *Server, srv *mcp.Server, d toolDef[A, R]) {
	addSummarized(s, srv, d, func(r R) R { return r })
}

// addSummarized registers one tool: the handler enters the session, reports
// progress when asked, runs the call, logs it and renders the result, with
// summary(result) as its structured content.
func addSummarized[A args, R, O any](s *Server, srv *mcp.Server, d toolDef[A, R], summary func(R) O) {
	in, err := inputSchema[A](s.enums)
	if err != nil {
		panic(err) // an argument type the schema inference cannot take: a wiring bug
	}
	t := &mcp.Tool{Name: d.name, Title: d.title, Description: d.desc, InputSchema: in}
	if d.readOnly { // the defaults (no annotations) say: may change the page, open world
		t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	}
	// The output type is any: the structured content is sent without an
	// output schema, which would add as much again to tools/list as the
	// input schemas for what the result's text already says.
	mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, a A) (*mcp.CallToolResult, any, error) {
		ctx, inv, st, done, err := s.enter(ctx, req.Session, a.common(), d.inspect == nil)
		if err != nil {
			return nil, nil, err
		}
		defer done()
		ctx = tools.WithApprover(ctx, elicitApproval(req.Session))
		start := time.Now()
		if d.progress != nil {
			if token := req.Params.GetProgressToken(); token != nil {
				stop := s.reportProgress(ctx, req.Session, token, d.progress(a))
				defer stop()
			}
		}
		var r R
		if d.inspect != nil {
			r, err = d.inspect(ctx, st, inv, a)
		} else {
			r, err = d.call(ctx, inv, a)
		}
		ms := time.Since(start).Milliseconds()
		if err != nil {
			st.logger.Warn("browser tool failed", "tool", d.name, "conversationId", inv.ConversationID,
				"code", errorCode(err), "durationMs", ms, "error", err)
			return nil, nil, toolError{err}
		}
		st.logger.Info("browser tool done", "tool", d.name, "conversationId", inv.ConversationID,
			"backend", d.backend(r), "durationMs", ms)
		var content []mcp.Content
		if d.content != nil {
			if content, err = d.content(s, st, r); err != nil {
				return nil, nil, toolError{err}
			}
		} else {
			content = []mcp.Content{&mcp.TextContent{Text: d.text(r)}}
		}
		if c, ok := tools.CallOf(&r); ok && c.Dialog != nil {
			content = append(content, &mcp.TextContent{Text: dialogText(*c.Dialog)})
		}
		return &mcp.CallToolResult{Content: content}, summary(r), nil
	})
}

// reportProgress sends a progress notification now and then every
// ProgressInterval until stop is called; stop returns once no notification
// is being sent.
func (s *Server) reportProgress(ctx context.Context, ss *mcp.ServerSession, token any, msg string) (stop func()) {
	start := time.Now()
	n := 0
	send := func() {
		msg := msg
		if n > 0 {
			msg = fmt.Sprintf("%s (%.0f s)", msg, time.Since(start).Seconds())
		}
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
		n++
	}
	send()
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(s.opts.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				send()
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// screenshotContent makes the screenshot a resource of the session and
// returns the caption and the image or its resource link.
func screenshotContent(s *Server, st *session, r tools.ScreenshotResult) ([]mcp.Content, error) {
	caption := &mcp.TextContent{Text: screenshotText(r)}
	link := s.addFile(st, ScreenshotURIPrefix, r.Path, r.MediaType, "Screenshot of "+r.URL, r.Size)
	if s.opts.Screenshots == ScreenshotResourceLink {
		return []mcp.Content{caption, link}, nil
	}
	data, err := os.ReadFile(r.Path)
	if err != nil {
		return nil, &tools.Error{Op: "screenshot", Code: tools.CodeIO, Message: "reading the screenshot file", Err: err}
	}
	return []mcp.Content{caption, &mcp.ImageContent{Data: data, MIMEType: r.MediaType}}, nil
}

// actionBackend is the backend that served an action tool's call.
func actionBackend(r tools.ActionResult) browserbackend.Kind { return r.Backend }
