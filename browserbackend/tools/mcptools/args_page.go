package mcptools

import "github.com/browserchain/browserchain/browserbackend/tools"

// HistoryArgs is the browser_navigate_back, browser_navigate_forward and
// browser_reload input.
type HistoryArgs struct {
	Common
}

// EvaluateArgs is the browser_evaluate input.
type EvaluateArgs struct {
	Function string `json:"function" jsonschema:"A JavaScript function expression, e.g. () => document.title, or (el) => el.value with ref or selector set. Its return value (awaited) comes back as JSON."`
	Element
	MaxChars int `json:"max_chars,omitempty" jsonschema:"Longest JSON text returned, 0 to 1000000; 0 or omitted means 50000. A longer value is cut."`
	Common
}

// ConsoleArgs is the browser_console_messages input.
type ConsoleArgs struct {
	Level  string `json:"level,omitempty" jsonschema:"Lowest level returned: debug (all, the default), info, warning or error."`
	Search string `json:"search,omitempty" jsonschema:"Only messages containing this text (case-insensitive)."`
	Limit  int    `json:"limit,omitempty" jsonschema:"The last this many messages, 0 to 1000; 0 or omitted means 100."`
	Common
}

// NetworkArgs is the browser_network_requests input.
type NetworkArgs struct {
	Type        string `json:"type,omitempty" jsonschema:"Only requests of this type: document, script, stylesheet, image, font, fetch, xhr, beacon, link or other."`
	URLContains string `json:"url_contains,omitempty" jsonschema:"Only requests whose URL contains this text."`
	Limit       int    `json:"limit,omitempty" jsonschema:"The last this many requests, 0 to 1000; 0 or omitted means 100."`
	Common
}

// PDFArgs is the browser_pdf_save input.
type PDFArgs struct {
	Landscape       bool    `json:"landscape,omitempty" jsonschema:"Landscape orientation."`
	PrintBackground bool    `json:"print_background,omitempty" jsonschema:"Print background colours and images."`
	Scale           float64 `json:"scale,omitempty" jsonschema:"Rendering scale, 0.1 to 2; 0 or omitted means 1."`
	PaperWidth      float64 `json:"paper_width,omitempty" jsonschema:"Paper width in inches; 0 or omitted means 8.5."`
	PaperHeight     float64 `json:"paper_height,omitempty" jsonschema:"Paper height in inches; 0 or omitted means 11."`
	PageRanges      string  `json:"page_ranges,omitempty" jsonschema:"Pages to print, e.g. 1-3, 5; omitted prints all."`
	Common
}

// ResizeArgs is the browser_resize input.
type ResizeArgs struct {
	Width       int     `json:"width" jsonschema:"Viewport width in CSS pixels, 1 to 16384; 0 with height 0 restores the window's own size."`
	Height      int     `json:"height" jsonschema:"Viewport height in CSS pixels, 1 to 16384; 0 with width 0 restores the window's own size."`
	DeviceScale float64 `json:"device_scale,omitempty" jsonschema:"Device pixel ratio, 0 to 10; 0 or omitted keeps the browser's."`
	Mobile      bool    `json:"mobile,omitempty" jsonschema:"Emulate a mobile device (meta viewport, overlay scroll bars)."`
	Common
}

// FormFieldArgs is one field of browser_fill_form.
type FormFieldArgs struct {
	Element
	Value string `json:"value" jsonschema:"Text for a text field (replaces its content), the option value or label for a select, true or false for a checkbox; ignored for a radio button, which is checked."`
}

// FillFormArgs is the browser_fill_form input.
type FillFormArgs struct {
	Fields []FormFieldArgs `json:"fields" jsonschema:"The fields to fill, in order (1 to 100)."`
	Common
}

func (a FillFormArgs) input() tools.FillFormInput {
	in := tools.FillFormInput{BrowserMode: a.BrowserMode, TimeoutMs: a.TimeoutMs}
	for _, f := range a.Fields {
		in.Fields = append(in.Fields, tools.FormField{Target: f.target(), Value: f.Value})
	}
	return in
}

// DragArgs is the browser_drag input.
type DragArgs struct {
	From Element `json:"from" jsonschema:"The element to drag: ref or selector."`
	To   Element `json:"to" jsonschema:"The element to drop on: ref or selector."`
	Common
}

// TabsArgs is the browser_tabs input.
type TabsArgs struct {
	Action string `json:"action,omitempty" jsonschema:"list (the default), new, select or close."`
	TabID  string `json:"tab_id,omitempty" jsonschema:"For select and close: a tab id from list."`
	URL    string `json:"url,omitempty" jsonschema:"For new: a URL to load in the new tab."`
	Common
}
