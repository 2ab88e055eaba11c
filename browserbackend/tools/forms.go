package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// MaxFormFields bounds FillFormInput.Fields.
const MaxFormFields = 100

// FillFormInput is the browser_fill_form tool input.
type FillFormInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Fields are filled in order (1–MaxFormFields).
	Fields []FormField `json:"fields"`
}

// FormField is one control to fill.
type FormField struct {
	Target
	// Value is the text of a text field or text area (replacing what it
	// holds), the option (value or label) of a select, "true" or "false"
	// for a checkbox; a radio button is checked whatever Value says.
	Value string `json:"value"`
}

// FilledField is what FillForm did to one control.
type FilledField struct {
	Ref string `json:"ref,omitempty"`
	// Kind is "text", "select", "checkbox" or "radio".
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// FillFormResult lists the controls filled, in order.
type FillFormResult struct {
	Fields []FilledField `json:"fields"`
	Call
}

func checkFillForm(in FillFormInput) error {
	const op = "fill_form"
	if len(in.Fields) == 0 || len(in.Fields) > MaxFormFields {
		return invalidInput(op, "fields must hold 1–"+strconv.Itoa(MaxFormFields)+" entries")
	}
	for i, f := range in.Fields {
		if err := checkTarget(op, f.Target); err != nil {
			return invalidInput(op, fmt.Sprintf("field %d: ref or selector is required, as a valid ref", i))
		}
		if utf8.RuneCountInString(f.Value) > MaxTypeChars {
			return invalidInput(op, fmt.Sprintf("field %d: value longer than %d characters", i, MaxTypeChars))
		}
	}
	return nil
}

// fillFormCheck is the write and credential check of every field.
func fillFormCheck(in FillFormInput) func(ctx context.Context, p *Page, g *guard.Guard) error {
	return func(ctx context.Context, p *Page, g *guard.Guard) error {
		for _, f := range in.Fields {
			if err := actionCheck("fill_form", f.Target, false, true)(ctx, p, g); err != nil {
				return err
			}
			if err := checkTypedText("fill_form", f.Value); err != nil {
				return err
			}
		}
		return nil
	}
}

// controlKindFn reports what kind of control the element is, and a check
// box's or radio button's state.
const controlKindFn = `function() {
	const t = (this.type || '').toLowerCase();
	if (this.tagName === 'SELECT') return {kind: 'select'};
	if (this.tagName === 'INPUT' && (t === 'checkbox' || t === 'radio')) return {kind: t, checked: this.checked};
	if (this.tagName === 'TEXTAREA' || this.isContentEditable || (this.tagName === 'INPUT' &&
		!['button', 'submit', 'reset', 'image', 'file', 'hidden', 'range', 'color'].includes(t))) return {kind: 'text'};
	return {kind: ''};
}`

// fillForm fills each field in order: text fields are focused, emptied and
// typed into (Input.insertText), selects set as SelectOption does, check
// boxes and radio buttons clicked when their state differs. A control of
// another kind is CodeInvalidInput naming the field; fields before it stay
// filled.
func (p *Page) fillForm(ctx context.Context, in FillFormInput) (FillFormResult, error) {
	const op = "fill_form"
	if err := checkFillForm(in); err != nil {
		return FillFormResult{}, err
	}
	var res FillFormResult
	for i, f := range in.Fields {
		done, err := p.fillField(ctx, op, f)
		if err != nil {
			var te *Error
			if errors.As(err, &te) && te.Code == CodeInvalidInput {
				return res, invalidInput(op, fmt.Sprintf("field %d (%s): %s", i, f.Target, te.Message))
			}
			return res, err
		}
		res.Fields = append(res.Fields, done)
	}
	return res, nil
}

func (p *Page) fillField(ctx context.Context, op string, f FormField) (FilledField, error) {
	node, err := p.resolve(ctx, op, f.Target)
	if err != nil {
		return FilledField{}, err
	}
	var c struct {
		Kind    string `json:"kind"`
		Checked bool   `json:"checked"`
	}
	if err := p.callOn(ctx, op, node, controlKindFn, &c); err != nil {
		return FilledField{}, err
	}
	out := FilledField{Ref: Ref(node), Kind: c.Kind, Value: f.Value}
	switch c.Kind {
	case "text":
		if _, err := p.Type(ctx, TypeInput{Target: Target{Ref: out.Ref}, Text: f.Value, Clear: true}); err != nil {
			return FilledField{}, err
		}
		return out, nil
	case "select":
		var sel *[]string
		if err := p.callOn(ctx, op, node, selectFn, &sel, []string{f.Value}); err != nil {
			return FilledField{}, err
		}
		if sel == nil {
			return FilledField{}, &Error{Op: op, Code: CodeNotFound, Message: fmt.Sprintf("no option matches %q", f.Value)}
		}
		return out, nil
	case "checkbox", "radio":
		want := c.Kind == "radio"
		if !want {
			b, err := strconv.ParseBool(f.Value)
			if err != nil {
				return FilledField{}, invalidInput(op, "a checkbox's value must be true or false")
			}
			want = b
		}
		out.Value = strconv.FormatBool(want)
		if c.Checked == want {
			return out, nil
		}
		if _, err := p.Click(ctx, ElementInput{Target: Target{Ref: out.Ref}}); err != nil {
			return FilledField{}, err
		}
		return out, nil
	}
	return FilledField{}, invalidInput(op, "not a text field, select, checkbox or radio button")
}

// DragInput is the browser_drag tool input: the element at From is dragged
// onto the element at To.
type DragInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	From        Target `json:"from"`
	To          Target `json:"to"`
}

// DragResult is where the drag started and ended, in viewport CSS pixels.
type DragResult struct {
	FromX float64 `json:"fromX"`
	FromY float64 `json:"fromY"`
	ToX   float64 `json:"toX"`
	ToY   float64 `json:"toY"`
	// HTML5 is true when the page started an HTML drag and drop (draggable
	// elements, dataTransfer), false for a pointer drag (mouse events only).
	HTML5 bool `json:"html5,omitempty"`
	Effects
	Call
}

func checkDrag(in DragInput) error {
	if err := checkTarget("drag", in.From); err != nil {
		return invalidInput("drag", "from: ref or selector is required, as a valid ref")
	}
	if err := checkTarget("drag", in.To); err != nil {
		return invalidInput("drag", "to: ref or selector is required, as a valid ref")
	}
	return nil
}

// drag presses the left button on From's centre, moves to To's centre and
// releases there (Input.dispatchMouseEvent). An HTML drag the page starts
// is intercepted (Input.setInterceptDrags) and dropped on To with
// Input.dispatchDragEvent, since a headless browser runs no native drag
// loop; a pointer drag is mouse events only.
func (p *Page) drag(ctx context.Context, in DragInput) (DragResult, error) {
	const op = "drag"
	if err := checkDrag(in); err != nil {
		return DragResult{}, err
	}
	from, err := p.resolve(ctx, op, in.From)
	if err != nil {
		return DragResult{}, err
	}
	to, err := p.resolve(ctx, op, in.To)
	if err != nil {
		return DragResult{}, err
	}
	fx, fy, err := p.centre(ctx, op, from)
	if err != nil {
		return DragResult{}, err
	}
	drags, stop := p.s.Subscribe(input.DragIntercepted.Method)
	defer stop()
	start := time.Now()
	if _, err := cdp.Call(ctx, p.s, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
		return DragResult{}, wrap(op, err)
	}
	rtt := time.Since(start)
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopLoadingTimeout)
		defer cancel()
		_, _ = cdp.Call(dctx, p.s, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: false})
	}()
	res := DragResult{FromX: fx, FromY: fy}
	for _, ev := range []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: fx, Y: fy},
		{Type: input.DispatchMouseEventTypeMousePressed, X: fx, Y: fy, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: input.DispatchMouseEventTypeMouseMoved, X: fx + 8, Y: fy + 8, Button: input.MouseButtonLeft, Buttons: 1},
	} {
		if err := p.mouse(ctx, op, ev); err != nil {
			return DragResult{}, err
		}
	}
	res.ToX, res.ToY, err = p.centre(ctx, op, to)
	if err != nil {
		_ = p.mouse(ctx, op, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: fx, Y: fy, Button: input.MouseButtonLeft, ClickCount: 1})
		return DragResult{}, err
	}
	// A drag the page starts is announced on the first move away from the
	// press; wait for it as an action waits for what it caused.
	var data *input.DragData
	window := time.NewTimer(settleWindow + 4*rtt)
	defer window.Stop()
	select {
	case raw := <-drags:
		var ev input.EventDragIntercepted
		if decodeValue(raw, &ev) == nil {
			data = ev.Data
		}
	case <-window.C:
	case <-ctx.Done():
		return DragResult{}, wrap(op, ctx.Err())
	}
	res.Effects, err = p.caused(ctx, op, func() error {
		if data != nil {
			res.HTML5 = true
			for _, t := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
				if _, err := cdp.Call(ctx, p.s, input.DispatchDragEvent, input.DispatchDragEventParams{Type: t, X: res.ToX, Y: res.ToY, Data: data}); err != nil {
					return wrap(op, err)
				}
			}
		} else if err := p.mouse(ctx, op, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: res.ToX, Y: res.ToY, Button: input.MouseButtonLeft, Buttons: 1}); err != nil {
			return err
		}
		return p.mouse(ctx, op, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: res.ToX, Y: res.ToY, Button: input.MouseButtonLeft, ClickCount: 1})
	})
	if err != nil {
		return DragResult{}, err
	}
	return res, nil
}
