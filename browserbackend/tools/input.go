package tools

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
)

// ElementInput is the input of the tools that act on one element
// (browser_click, browser_hover).
type ElementInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	Target
}

// ActionResult is what an action on the page reports.
type ActionResult struct {
	// Ref is the element acted on, when there was one.
	Ref string `json:"ref,omitempty"`
	// X, Y are the viewport CSS-pixel coordinates the mouse event hit.
	X float64 `json:"x,omitempty"`
	Y float64 `json:"y,omitempty"`
	// Effects is what a click, key press, submitted type or selection
	// caused: the navigation it started (awaited), the windows it opened.
	Effects
	Call
}

// caused runs the input of an action with e watching the page and reports
// what it caused. The input went out once do returns nil: a failure to find
// out what it caused leaves Effects empty rather than failing the action.
func (p *Page) caused(ctx context.Context, op string, do func() error) (Effects, error) {
	e, err := p.watchEffects(ctx, op)
	if err != nil {
		return Effects{}, err
	}
	return e.run(ctx, p, op, do)
}

// run sends the input (do) and settles e.
func (e *effects) run(ctx context.Context, p *Page, op string, do func() error) (Effects, error) {
	if err := do(); err != nil {
		e.close()
		return Effects{}, err
	}
	out, _ := e.settle(ctx, p, op)
	return out, nil
}

// Click clicks the element's content-box centre with the left button
// (DOM.scrollIntoViewIfNeeded, DOM.getBoxModel, then Input.dispatchMouseEvent
// mouseMoved, mousePressed, mouseReleased with clickCount 1). It returns
// once the browser has dispatched the events and, when the click started a
// navigation of the page, once the new document loaded (Effects; without
// one it returns at once). A dialog the click raises blocks the page until
// it is answered (see Tools' DialogPolicy).
func (p *Page) Click(ctx context.Context, in ElementInput) (ActionResult, error) {
	const op = "click"
	el, done, err := p.element(ctx, op, in.Target)
	defer done()
	if err != nil {
		return ActionResult{}, err
	}
	x, y, eff, err := p.click(ctx, op, el)
	if err != nil {
		return ActionResult{}, err
	}
	return ActionResult{Ref: el.ref, X: x, Y: y, Effects: eff}, nil
}

// click clicks el's centre, watching what the click causes (watchClick);
// x, y are the point in the page's CSS pixels.
func (p *Page) click(ctx context.Context, op string, el elem) (x, y float64, eff Effects, err error) {
	lx, ly, x, y, err := el.centre(ctx, op)
	if err != nil {
		return 0, 0, Effects{}, err
	}
	e, err := p.watchClick(ctx, op)
	if err != nil {
		return 0, 0, Effects{}, err
	}
	eff, err = e.run(ctx, p, op, func() error {
		for _, ev := range []input.DispatchMouseEventParams{
			{Type: input.DispatchMouseEventTypeMouseMoved, X: lx, Y: ly},
			{Type: input.DispatchMouseEventTypeMousePressed, X: lx, Y: ly, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
			{Type: input.DispatchMouseEventTypeMouseReleased, X: lx, Y: ly, Button: input.MouseButtonLeft, ClickCount: 1},
		} {
			if err := el.mouse(ctx, op, ev); err != nil {
				return err
			}
		}
		return nil
	})
	return x, y, eff, err
}

// Hover moves the mouse to the element's content-box centre
// (Input.dispatchMouseEvent mouseMoved).
func (p *Page) Hover(ctx context.Context, in ElementInput) (ActionResult, error) {
	const op = "hover"
	el, done, err := p.element(ctx, op, in.Target)
	defer done()
	if err != nil {
		return ActionResult{}, err
	}
	lx, ly, x, y, err := el.centre(ctx, op)
	if err != nil {
		return ActionResult{}, err
	}
	if err := el.mouse(ctx, op, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: lx, Y: ly}); err != nil {
		return ActionResult{}, err
	}
	return ActionResult{Ref: el.ref, X: x, Y: y}, nil
}

// MaxTypeChars bounds TypeInput.Text.
const MaxTypeChars = 100_000

// TypeInput is the browser_type tool input.
type TypeInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	Target
	// Text to type (at most MaxTypeChars runes).
	Text string `json:"text"`
	// Clear empties the field first (value set to "" with an input event).
	Clear bool `json:"clear,omitempty"`
	// Slowly sends one key event pair per character instead of one
	// Input.insertText, for pages that listen to key events.
	Slowly bool `json:"slowly,omitempty"`
	// Submit presses Enter afterwards.
	Submit bool `json:"submit,omitempty"`
}

const clearFn = `function() {
	if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); }
	else if (this.isContentEditable) { this.textContent = ''; }
	return true;
}`

// Type focuses the element (DOM.focus) and types Text into it with
// Input.insertText (or, with Slowly, Input.dispatchKeyEvent keyDown/keyUp per
// character); with Submit it then presses Enter. Typed text is never logged.
func (p *Page) Type(ctx context.Context, in TypeInput) (ActionResult, error) {
	const op = "type"
	if utf8.RuneCountInString(in.Text) > MaxTypeChars {
		return ActionResult{}, invalidInput(op, fmt.Sprintf("text longer than %d characters", MaxTypeChars))
	}
	el, done, err := p.element(ctx, op, in.Target)
	defer done()
	if err != nil {
		return ActionResult{}, err
	}
	if _, err := cdp.Call(ctx, el.s, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: el.node}); err != nil {
		return ActionResult{}, el.nodeErr(op, err)
	}
	if _, err := cdp.Call(ctx, el.s, dom.Focus, dom.FocusParams{BackendNodeID: el.node}); err != nil {
		return ActionResult{}, elementErr(op, "the element cannot take focus", err)
	}
	if in.Clear {
		if err := el.callOn(ctx, op, el.node, clearFn, nil); err != nil {
			return ActionResult{}, err
		}
	}
	if in.Slowly {
		for _, r := range in.Text {
			k := keyFor(string(r))
			if err := el.key(ctx, op, k, 0); err != nil {
				return ActionResult{}, err
			}
		}
	} else if in.Text != "" {
		if _, err := cdp.Call(ctx, el.s, input.InsertText, input.InsertTextParams{Text: in.Text}); err != nil {
			return ActionResult{}, wrap(op, err)
		}
	}
	res := ActionResult{Ref: el.ref}
	if in.Submit {
		eff, err := p.caused(ctx, op, func() error { return el.key(ctx, op, keys["enter"], 0) })
		if err != nil {
			return ActionResult{}, err
		}
		res.Effects = eff
	}
	return res, nil
}

// keyDef describes a key for Input.dispatchKeyEvent.
type keyDef struct {
	key, code string
	vk        int64
	text      string
}

// keys are the named keys PressKey accepts (lower-case names).
var keys = map[string]keyDef{
	"enter":      {"Enter", "Enter", 13, "\r"},
	"tab":        {"Tab", "Tab", 9, ""},
	"escape":     {"Escape", "Escape", 27, ""},
	"esc":        {"Escape", "Escape", 27, ""},
	"backspace":  {"Backspace", "Backspace", 8, ""},
	"delete":     {"Delete", "Delete", 46, ""},
	"space":      {" ", "Space", 32, " "},
	"arrowup":    {"ArrowUp", "ArrowUp", 38, ""},
	"arrowdown":  {"ArrowDown", "ArrowDown", 40, ""},
	"arrowleft":  {"ArrowLeft", "ArrowLeft", 37, ""},
	"arrowright": {"ArrowRight", "ArrowRight", 39, ""},
	"home":       {"Home", "Home", 36, ""},
	"end":        {"End", "End", 35, ""},
	"pageup":     {"PageUp", "PageUp", 33, ""},
	"pagedown":   {"PageDown", "PageDown", 34, ""},
}

// modifier bits of Input.dispatchKeyEvent.
var modifiers = map[string]int64{"alt": 1, "control": 2, "ctrl": 2, "meta": 4, "command": 4, "cmd": 4, "shift": 8}

// keyFor returns the definition of a named key or a single character.
func keyFor(s string) keyDef {
	if k, ok := keys[strings.ToLower(s)]; ok {
		return k
	}
	r, _ := utf8.DecodeRuneInString(s)
	k := keyDef{key: s, text: s}
	switch {
	case r >= 'a' && r <= 'z':
		k.code, k.vk = "Key"+strings.ToUpper(s), int64(r-'a'+'A')
	case r >= 'A' && r <= 'Z':
		k.code, k.vk = "Key"+s, int64(r)
	case r >= '0' && r <= '9':
		k.code, k.vk = "Digit"+s, int64(r)
	}
	return k
}

// parseKey parses "Enter", "a", "Control+a", "Shift+Tab".
func parseKey(op, spec string) (keyDef, int64, error) {
	parts := strings.Split(spec, "+")
	if spec == "+" {
		parts = []string{"+"}
	}
	var mods int64
	for _, m := range parts[:len(parts)-1] {
		bit, ok := modifiers[strings.ToLower(strings.TrimSpace(m))]
		if !ok {
			return keyDef{}, 0, invalidInput(op, fmt.Sprintf("unknown modifier %q (alt, control, meta, shift)", m))
		}
		mods |= bit
	}
	name := parts[len(parts)-1]
	if name == "" {
		return keyDef{}, 0, invalidInput(op, "key is required")
	}
	if _, named := keys[strings.ToLower(name)]; !named && utf8.RuneCountInString(name) != 1 {
		return keyDef{}, 0, invalidInput(op, fmt.Sprintf("unknown key %q: use a single character or one of Enter, Tab, Escape, Backspace, Delete, Space, Arrow{Up,Down,Left,Right}, Home, End, PageUp, PageDown", name))
	}
	return keyFor(name), mods, nil
}

// key sends keyDown (or rawKeyDown for a key without text) and keyUp.
func (p *Page) key(ctx context.Context, op string, k keyDef, mods int64) error {
	text := k.text
	if mods&^8 != 0 { // with Alt/Control/Meta a key produces no text
		text = ""
	}
	down := input.DispatchKeyEventTypeKeyDown
	if text == "" {
		down = input.DispatchKeyEventTypeRawKeyDown
	}
	for _, ev := range []input.DispatchKeyEventParams{
		{Type: down, Key: k.key, Code: k.code, WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Text: text, UnmodifiedText: text, Modifiers: mods},
		{Type: input.DispatchKeyEventTypeKeyUp, Key: k.key, Code: k.code, WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Modifiers: mods},
	} {
		if _, err := cdp.Call(ctx, p.s, input.DispatchKeyEvent, ev); err != nil {
			return wrap(op, err)
		}
	}
	return nil
}

// PressKeyInput is the browser_press_key tool input.
type PressKeyInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Key is a single character or a named key, optionally with modifiers:
	// "Enter", "a", "Control+a", "Shift+Tab".
	Key string `json:"key"`
	// Target, optional, is focused first; otherwise the key goes to the
	// focused element.
	Target
}

// PressKey presses one key (Input.dispatchKeyEvent keyDown/rawKeyDown and
// keyUp), after focusing the target when one is given.
func (p *Page) PressKey(ctx context.Context, in PressKeyInput) (ActionResult, error) {
	const op = "press_key"
	k, mods, err := parseKey(op, in.Key)
	if err != nil {
		return ActionResult{}, err
	}
	var res ActionResult
	at := p // where the key goes: the target's frame, if any
	if !in.Target.empty() {
		el, done, err := p.element(ctx, op, in.Target)
		defer done()
		if err != nil {
			return res, err
		}
		if _, err := cdp.Call(ctx, el.s, dom.Focus, dom.FocusParams{BackendNodeID: el.node}); err != nil {
			return res, elementErr(op, "the element cannot take focus", err)
		}
		res.Ref, at = el.ref, el.Page
	}
	eff, err := p.caused(ctx, op, func() error { return at.key(ctx, op, k, mods) })
	res.Effects = eff
	return res, err
}

// ScrollInput is the browser_scroll tool input.
type ScrollInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Target, optional: with no deltas the element is scrolled into view;
	// with deltas the wheel event is sent at its centre.
	Target
	// DeltaX, DeltaY in CSS pixels (positive: right, down). With neither a
	// target nor deltas, DeltaY defaults to one viewport height.
	DeltaX float64 `json:"delta_x,omitempty"`
	DeltaY float64 `json:"delta_y,omitempty"`
}

// Scroll scrolls the page with a mouse wheel event (Input.dispatchMouseEvent
// mouseWheel) at the target's centre or the viewport's centre, or brings the
// target into view (DOM.scrollIntoViewIfNeeded) when no delta is given. The
// browser scrolls asynchronously after the event is dispatched.
func (p *Page) Scroll(ctx context.Context, in ScrollInput) (ActionResult, error) {
	const op = "scroll"
	var res ActionResult
	var x, y float64 // where the wheel event goes, in at's viewport
	at := p
	if !in.Target.empty() {
		el, done, err := p.element(ctx, op, in.Target)
		defer done()
		if err != nil {
			return res, err
		}
		res.Ref, at = el.ref, el.Page
		if x, y, res.X, res.Y, err = el.centre(ctx, op); err != nil {
			return res, err
		}
		if in.DeltaX == 0 && in.DeltaY == 0 {
			return res, nil
		}
	} else {
		m, err := cdp.Call(ctx, p.s, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return res, wrap(op, err)
		}
		if m.CSSLayoutViewport != nil {
			x, y = float64(m.CSSLayoutViewport.ClientWidth)/2, float64(m.CSSLayoutViewport.ClientHeight)/2
			if in.DeltaX == 0 && in.DeltaY == 0 {
				in.DeltaY = float64(m.CSSLayoutViewport.ClientHeight)
			}
		}
	}
	if at == p {
		res.X, res.Y = x, y
	}
	// Chrome requires both deltas on mouseWheel, and cdproto's params type
	// omits a zero delta, so this one command goes out untyped.
	err := at.s.Call(ctx, input.CommandDispatchMouseEvent, map[string]any{
		"type": input.DispatchMouseEventTypeMouseWheel, "x": x, "y": y, "deltaX": in.DeltaX, "deltaY": in.DeltaY,
	}, nil)
	return res, wrap(op, err)
}

// SelectOptionInput is the browser_select_option tool input.
type SelectOptionInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	Target
	// Values are matched against each option's value, then its label; a
	// single-choice select takes the first match.
	Values []string `json:"values"`
}

// SelectOptionResult reports the options selected afterwards.
type SelectOptionResult struct {
	Selected []string `json:"selected"`
	// Effects is what the change caused (a navigation, a window).
	Effects
	Call
}

const selectFn = `function(values) {
	if (this.tagName !== 'SELECT') throw new Error('element is a ' + this.tagName.toLowerCase() + ', not a select');
	const want = new Set(values);
	let matched = 0;
	for (const o of this.options) {
		const hit = want.has(o.value) || want.has(o.label) || want.has(o.textContent.trim());
		if (this.multiple) { o.selected = hit; if (hit) matched++; }
		else if (hit && matched === 0) { o.selected = true; matched++; }
	}
	if (matched === 0) return null;
	this.dispatchEvent(new Event('input', {bubbles: true}));
	this.dispatchEvent(new Event('change', {bubbles: true}));
	return Array.from(this.selectedOptions).map(o => o.value);
}`

// SelectOption selects the options of a <select> whose value or label is in
// Values and fires input and change events (Runtime.callFunctionOn). No
// matching option is CodeNotFound.
func (p *Page) SelectOption(ctx context.Context, in SelectOptionInput) (SelectOptionResult, error) {
	const op = "select_option"
	if len(in.Values) == 0 {
		return SelectOptionResult{}, invalidInput(op, "values is required")
	}
	el, done, err := p.element(ctx, op, in.Target)
	defer done()
	if err != nil {
		return SelectOptionResult{}, err
	}
	var sel *[]string
	eff, err := p.caused(ctx, op, func() error { return el.callOn(ctx, op, el.node, selectFn, &sel, in.Values) })
	if err != nil {
		return SelectOptionResult{}, err
	}
	if sel == nil {
		return SelectOptionResult{}, &Error{Op: op, Code: CodeNotFound, Message: fmt.Sprintf("no option matches %q", in.Values)}
	}
	return SelectOptionResult{Selected: *sel, Effects: eff}, nil
}
