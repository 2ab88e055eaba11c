package tools

import (
	"context"
	"strconv"
	"strings"
)

// EvaluateInput is the browser_evaluate tool input.
type EvaluateInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Function is a JavaScript function expression, e.g.
	// "() => document.title", or "(el) => el.value" with an element Target,
	// which it then receives as its one argument. A returned promise is
	// awaited.
	Function string `json:"function"`
	// Target optionally names the element passed to Function.
	Target
	// MaxChars bounds the JSON text of the value (default
	// DefaultExtractMaxChars, at most MaxExtractChars).
	MaxChars int `json:"max_chars,omitempty"`
}

// EvaluateResult is the value Function returned.
type EvaluateResult struct {
	// JSON is the value as JSON text: DOM nodes become "<tag>" strings,
	// functions "[function]", repeated objects "[circular]", bigints their
	// decimal text; "undefined" for undefined. When Truncated it is cut at
	// MaxChars and no longer valid JSON.
	JSON      string `json:"json"`
	Truncated bool   `json:"truncated,omitempty"`
	// Chars is the length of the whole JSON text, in UTF-16 code units.
	Chars int `json:"chars"`
	Call
}

// MaxEvaluateFunction bounds EvaluateInput.Function, in bytes.
const MaxEvaluateFunction = 64 << 10

// evalWrap is the function Runtime.callFunctionOn runs: the agent's function
// is embedded as source (so a page's Content-Security-Policy does not apply)
// and its value serialised, and cut, in the page.
const evalWrap = `async function(__max) {
	const __f = (%s
	);
	const __v = await __f(this === globalThis ? undefined : this);
	if (__v === undefined) return {t: 'undefined', n: 9, c: false};
	const __seen = new WeakSet();
	const __s = JSON.stringify(__v, (k, x) => {
		if (typeof Node !== 'undefined' && x instanceof Node) return '<' + x.nodeName.toLowerCase() + '>';
		if (typeof x === 'function') return '[function]';
		if (typeof x === 'bigint') return x.toString();
		if (x && typeof x === 'object') { if (__seen.has(x)) return '[circular]'; __seen.add(x); }
		return x;
	});
	const __t = __s === undefined ? 'undefined' : __s;
	return {t: __t.length > __max ? __t.slice(0, __max) : __t, n: __t.length, c: __t.length > __max};
}`

func checkEvaluate(in EvaluateInput) error {
	const op = "evaluate"
	if strings.TrimSpace(in.Function) == "" {
		return invalidInput(op, "function is required")
	}
	if len(in.Function) > MaxEvaluateFunction {
		return invalidInput(op, "function longer than "+strconv.Itoa(MaxEvaluateFunction)+" bytes")
	}
	return checkRange(op, "max_chars", in.MaxChars, MaxExtractChars)
}

// evaluateFn runs in.Function in the page's main world (on the element when
// in.Target names one) and returns its value as JSON text. A function that
// throws, or does not parse, is CodePageError.
func (p *Page) evaluateFn(ctx context.Context, in EvaluateInput) (EvaluateResult, error) {
	const op = "evaluate"
	if err := checkEvaluate(in); err != nil {
		return EvaluateResult{}, err
	}
	max := in.MaxChars
	if max == 0 {
		max = DefaultExtractMaxChars
	}
	fn := strings.Replace(evalWrap, "%s", in.Function, 1)
	var out struct {
		T string `json:"t"`
		N int    `json:"n"`
		C bool   `json:"c"`
	}
	if !in.Target.empty() {
		node, err := p.resolve(ctx, op, in.Target)
		if err != nil {
			return EvaluateResult{}, err
		}
		if err := p.callOn(ctx, op, node, fn, &out, max); err != nil {
			return EvaluateResult{}, err
		}
	} else if err := p.evaluate(ctx, op, "("+fn+").call(globalThis, "+strconv.Itoa(max)+")", true, &out); err != nil {
		return EvaluateResult{}, err
	}
	return EvaluateResult{JSON: out.T, Chars: out.N, Truncated: out.C}, nil
}
