package mcptools

import "github.com/browserchain/browserchain/browserbackend/tools"

// HistoryArgs is the browser_history input.
type HistoryArgs struct {
	Step string `json:"step" jsonschema:"Which way."`
	Common
}

// EvaluateArgs is the browser_evaluate input.
type EvaluateArgs struct {
	Function string `json:"function" jsonschema:"JavaScript function, e.g. () => document.title, or (el) => el.value with ref/selector. Returns its awaited value as JSON."`
	Element
	MaxChars int `json:"max_chars,omitempty" jsonschema:"Cut the JSON at this length (default 50000)."`
	Common
}

// ConsoleArgs is the browser_console_messages input.
type ConsoleArgs struct {
	Level  string `json:"level,omitempty" jsonschema:"Lowest level returned; omit for all."`
	Search string `json:"search,omitempty" jsonschema:"Text to match (any case)."`
	Limit  int    `json:"limit,omitempty" jsonschema:"Last N (default 100, max 1000)."`
	Common
}

// NetworkArgs is the browser_network_requests input.
type NetworkArgs struct {
	Type        string `json:"type,omitempty" jsonschema:"document, script, img, fetch, xhr, css, link, other…"`
	URLContains string `json:"url_contains,omitempty" jsonschema:"Text the URL contains."`
	Limit       int    `json:"limit,omitempty" jsonschema:"Last N (default 100, max 1000)."`
	Common
}

// PDFArgs is the browser_pdf_save input.
type PDFArgs struct {
	Landscape       bool    `json:"landscape,omitempty" jsonschema:"Landscape pages."`
	PrintBackground bool    `json:"print_background,omitempty" jsonschema:"Print backgrounds."`
	Scale           float64 `json:"scale,omitempty" jsonschema:"0.1 to 2 (default 1)."`
	PaperWidth      float64 `json:"paper_width,omitempty" jsonschema:"Inches (default 8.5)."`
	PaperHeight     float64 `json:"paper_height,omitempty" jsonschema:"Inches (default 11)."`
	PageRanges      string  `json:"page_ranges,omitempty" jsonschema:"e.g. 1-3, 5 (default all)."`
	Common
}

// ResizeArgs is the browser_resize input.
type ResizeArgs struct {
	Width       int     `json:"width" jsonschema:"CSS pixels, 1 to 16384; width and height 0 restore the window's size."`
	Height      int     `json:"height" jsonschema:"CSS pixels, 1 to 16384."`
	DeviceScale float64 `json:"device_scale,omitempty" jsonschema:"Device pixel ratio (default: the browser's)."`
	Mobile      bool    `json:"mobile,omitempty" jsonschema:"Emulate a phone."`
	Common
}

// FormFieldArgs is one field of browser_fill_form.
type FormFieldArgs struct {
	Element
	Value string `json:"value" jsonschema:"Text (replaces the field's), option value or label, or true/false for a checkbox; a radio is checked."`
}

// FillFormArgs is the browser_fill_form input.
type FillFormArgs struct {
	Fields []FormFieldArgs `json:"fields" jsonschema:"In order, 1 to 100."`
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
	From Element `json:"from" jsonschema:"Element to drag."`
	To   Element `json:"to" jsonschema:"Element to drop on."`
	Common
}

// TabsArgs is the browser_tabs input.
type TabsArgs struct {
	Action string `json:"action,omitempty" jsonschema:"Omit to list."`
	TabID  string `json:"tab_id,omitempty" jsonschema:"For select and close."`
	URL    string `json:"url,omitempty" jsonschema:"For new: URL to load."`
	Common
}
