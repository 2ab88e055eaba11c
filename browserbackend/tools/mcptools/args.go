package mcptools

import "github.com/browserchain/browserchain/browserbackend/tools"

// The argument types below are the tools' input schemas: each tool's JSON
// Schema is inferred from the struct, with the jsonschema tag as the
// property's description, every field without omitempty required, and an
// enum on the properties that take one of a fixed set (closedSets).
// Their JSON names are those of the tools package's input structs, so a call
// reads the same whether it comes over MCP or from Go.

// Common holds the properties every browser tool accepts. They are
// described once, at length, in the server's instructions and
// browser_status's description; each tool's schema only names them.
type Common struct {
	BrowserMode    string `json:"browser_mode,omitempty" jsonschema:"Omit for auto."`
	TimeoutMs      int    `json:"timeout_ms,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
}

func (c Common) common() Common { return c }

// Element names the element a tool acts on.
type Element struct {
	Ref      string `json:"ref,omitempty" jsonschema:"Ref from browser_snapshot, e.g. e42."`
	Selector string `json:"selector,omitempty" jsonschema:"CSS selector, if no ref."`
}

func (e Element) target() tools.Target { return tools.Target{Ref: e.Ref, Selector: e.Selector} }

// NavigateArgs is the browser_navigate input.
type NavigateArgs struct {
	URL          string `json:"url" jsonschema:"http, https, about:blank or data: URL."`
	NewTab       bool   `json:"new_tab,omitempty" jsonschema:"Load it in a new tab of the conversation's (browser_tabs lists them)."`
	UseActiveTab bool   `json:"use_active_tab,omitempty" jsonschema:"Work in the user's active tab; only when the user asks."`
	WaitUntil    string `json:"wait_until,omitempty" jsonschema:"After the commit: load (default), domcontentloaded or none. Still loading at the deadline: stillLoading true."`
	SessionArgs
	Common
}

// SnapshotArgs is the browser_snapshot input.
type SnapshotArgs struct {
	MaxNodes    int    `json:"max_nodes,omitempty" jsonschema:"Most nodes rendered (default 10000, max 50000); a cut says so."`
	Source      string `json:"source,omitempty" jsonschema:"dom (default, fast) or accessibility (exact, slower)."`
	Ref         string `json:"ref,omitempty" jsonschema:"Only this element's subtree."`
	MaxDepth    int    `json:"max_depth,omitempty" jsonschema:"Levels kept (default all)."`
	Interactive bool   `json:"interactive,omitempty" jsonschema:"Only what can be acted on, with its headings, forms and landmarks: far smaller."`
	Search      string `json:"search,omitempty" jsonschema:"Only nodes whose name or value contains this text, with their ancestors."`
	Diff        bool   `json:"diff,omitempty" jsonschema:"Only what appeared (+), changed (~) or went (-) since the previous snapshot."`
	Common
}

// ScreenshotArgs is the browser_screenshot input.
type ScreenshotArgs struct {
	Width    int  `json:"width,omitempty" jsonschema:"With height: capture this CSS-pixel area from the page's top-left."`
	Height   int  `json:"height,omitempty" jsonschema:"See width."`
	FullPage bool `json:"full_page,omitempty" jsonschema:"The whole scrollable page, not just the viewport."`
	Compact  bool `json:"compact,omitempty" jsonschema:"Smallest PNG (slower to encode)."`
	AsFile   bool `json:"as_file,omitempty" jsonschema:"Also store it in the server's file catalogue: a file id and a short-lived signed link."`
	Common
}

// ElementArgs is the browser_click and browser_hover input.
type ElementArgs struct {
	Element
	Common
}

// TypeArgs is the browser_type input.
type TypeArgs struct {
	Element
	Text   string `json:"text" jsonschema:"Text to type into the element."`
	Clear  bool   `json:"clear,omitempty" jsonschema:"Empty the field before typing."`
	Slowly bool   `json:"slowly,omitempty" jsonschema:"One key press per character, for pages that need key events; default inserts at once."`
	Submit bool   `json:"submit,omitempty" jsonschema:"Press Enter after typing."`
	Common
}

// PressKeyArgs is the browser_press_key input.
type PressKeyArgs struct {
	Key string `json:"key" jsonschema:"A character or a named key, optionally with modifiers joined by +: Enter, Tab, Escape, ArrowDown, a, Control+a, Shift+Tab."`
	Element
	Common
}

// FileUploadArgs is the browser_file_upload input.
type FileUploadArgs struct {
	Paths []string `json:"paths" jsonschema:"The files to upload, relative to the server's upload directory."`
	Element
	Common
}

// HandleDialogArgs is the browser_handle_dialog input.
type HandleDialogArgs struct {
	Accept     bool   `json:"accept" jsonschema:"true accepts the dialog (OK), false dismisses it (Cancel)."`
	PromptText string `json:"prompt_text,omitempty" jsonschema:"The answer to a prompt dialog when accepting; omit to keep its default."`
	Common
}

// ScrollArgs is the browser_scroll input.
type ScrollArgs struct {
	Element
	DeltaX float64 `json:"delta_x,omitempty" jsonschema:"CSS pixels, positive right."`
	DeltaY float64 `json:"delta_y,omitempty" jsonschema:"CSS pixels, positive down."`
	Common
}

// SelectOptionArgs is the browser_select_option input.
type SelectOptionArgs struct {
	Element
	Values []string `json:"values" jsonschema:"Options by value, then label; a single select takes the first match."`
	Common
}

// WaitForArgs is the browser_wait_for input: exactly one of selector, text
// and navigation/url_contains.
type WaitForArgs struct {
	Selector    string `json:"selector,omitempty" jsonschema:"Wait until an element matches this CSS selector."`
	Text        string `json:"text,omitempty" jsonschema:"Wait until the page's visible text contains this string."`
	Navigation  bool   `json:"navigation,omitempty" jsonschema:"Wait until a main-frame navigation has loaded."`
	URLContains string `json:"url_contains,omitempty" jsonschema:"Wait until the page's URL contains this."`
	Common
}

// ExtractArgs is the browser_extract input.
type ExtractArgs struct {
	Element
	MaxChars    int    `json:"max_chars,omitempty" jsonschema:"Most characters (default 50000, max 1000000)."`
	Instruction string `json:"instruction,omitempty" jsonschema:"Ask the server's model instead."`
	Schema      any    `json:"schema,omitempty" jsonschema:"JSON Schema of the model's answer."`
	Common
}

// LinksArgs is the browser_links input.
type LinksArgs struct {
	Contains string `json:"contains,omitempty" jsonschema:"Keep only links whose URL or text contains this string (case-insensitive)."`
	Limit    int    `json:"limit,omitempty" jsonschema:"Most links returned, 0 to 200; 0 or omitted means 50."`
	Common
}

// AttachArgs is the browser_attach input.
type AttachArgs struct {
	NewTab       bool `json:"new_tab,omitempty" jsonschema:"Open a new tab of the conversation's."`
	UseActiveTab bool `json:"use_active_tab,omitempty" jsonschema:"Work in the user's active tab; only when the user asks."`
	Common
}

// ReleaseArgs is the browser_detach and browser_close input.
type ReleaseArgs struct {
	Common
}

// StatusArgs is the browser_status input.
type StatusArgs struct {
	Probe *bool `json:"probe,omitempty" jsonschema:"Try connecting to each backend (default); false: preflight only."`
	Common
}

// LoginField is one field browser_login fills.
type LoginField struct {
	Element
	Value string `json:"value" jsonschema:"%username% or %password% (filled in by the server, never shown), possibly inside other text."`
}

// LoginArgs is the browser_login input.
type LoginArgs struct {
	Credential string       `json:"credential" jsonschema:"Vault entry name, e.g. login:app.example.com."`
	Fields     []LoginField `json:"fields" jsonschema:"Fields in order, each an element and its value (%username%, %password%)."`
	Submit     *Element     `json:"submit,omitempty" jsonschema:"Button clicked after filling; the call waits for its navigation."`
	Common
}

func (a LoginArgs) input() tools.LoginInput {
	in := tools.LoginInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs, Credential: a.Credential}
	for _, f := range a.Fields {
		in.Fields = append(in.Fields, tools.LoginField{Target: f.target(), Value: f.Value})
	}
	if a.Submit != nil {
		in.Submit = a.Submit.target()
	}
	return in
}
