// Package mcptools serves the browser tools of package tools as Model
// Context Protocol tools, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), over any MCP transport.
//
// A host application builds its Selector and tools.Tools as usual, then:
//
//	srv := mcptools.New(mcptools.Options{Tools: tl, ActorPrincipalID: "user-7"})
//	defer srv.Close()
//	ms := srv.NewMCPServer(nil)               // or srv.Register(yourServer)
//	err := ms.Run(ctx, mcptools.StdioTransport(os.Stdin, os.Stdout, nil)) // or mcp.NewStreamableHTTPHandler
//
// The tools are browser_navigate, browser_snapshot, browser_screenshot,
// browser_click, browser_type, browser_hover, browser_scroll,
// browser_press_key, browser_select_option, browser_wait_for,
// browser_extract, browser_links, browser_attach, browser_detach,
// browser_close, browser_status, browser_login, the page tools
// (browser_history … browser_tabs) and the plain-language browser_act and
// browser_observe (ToolNames); browser_extract takes an instruction or a
// schema for the model's answer. Each input schema is
// inferred from an argument type of this package (its jsonschema tags are
// the property descriptions), with an enum on every closed set, and has
// browser_mode, timeout_ms and conversation_id, described in a line each and
// at length once, in the server's instructions and browser_status's
// description. A result is a short text for the model plus the tools
// package's result as structured content (no output schema), except that
// browser_snapshot and browser_extract send their tree or text once, as the
// text, and a small summary (SnapshotSummary, ExtractSummary) as structured
// content; browser_screenshot adds the PNG as image content or, with
// ScreenshotResourceLink, a resource link. Every file a call writes is a
// resource of its MCP session: resources/list lists the session's own,
// resources/read reads them, and no other session sees them.
// When the Tools record (tools.Options.Recorder), browser_trace is added
// too: a conversation's record as structured content, or a resource link
// (TraceURIPrefix) to its HTML page. StreamableHTTPHandler serves the tools
// over streamable HTTP with resumable event streams.
//
// A call the Tools gate (tools.Options.Approvals) asks the session's client
// through MCP elicitation, a form of one boolean (approve); a client
// without the elicitation capability gets approval_unavailable.
//
// A failure is a tool error (IsError) whose text says what to do: a value
// outside an enum (an unknown browser_mode) is refused by the schema before
// any CDP command; a selection failure carries SelectionError.Report() — every
// backend tried and the remediation.
//
// Each MCP session has its own conversation (its own page or tab) unless a
// call names one; when the session ends, its conversation is closed. A named
// conversation lasts until browser_close or Server.Close.
// browser_navigate and browser_wait_for send progress notifications when the
// client asked for them with a progress token; every call is logged to the
// Logger and, once the client set a level, through MCP logging.
package mcptools
