package tools

import (
	"context"
	"encoding/json"
	"fmt"
)

// Extract and links limits.
const (
	// DefaultExtractMaxChars bounds extracted text when MaxChars is 0.
	DefaultExtractMaxChars = 50_000
	// MaxExtractChars is the largest MaxChars accepted.
	MaxExtractChars = 1_000_000
	// DefaultLinksLimit is the number of links returned when Limit is 0.
	DefaultLinksLimit = 50
	// MaxLinksLimit is the largest Limit accepted.
	MaxLinksLimit = 200
)

// ExtractInput is the browser_extract tool input. With no target it reads the
// whole page.
type ExtractInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	Target
	// MaxChars bounds the text (default DefaultExtractMaxChars, max
	// MaxExtractChars); the rest is cut and Truncated set.
	MaxChars int `json:"max_chars,omitempty"`
	// Instruction or Schema (a JSON Schema, draft 2020-12) make the
	// extract the model's answer instead of the text: see
	// PlainTools.Extract.
	Instruction string          `json:"instruction,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

// ExtractResult is the page's or an element's visible text.
type ExtractResult struct {
	URL  string `json:"url"`
	Text string `json:"text"`
	// Length is the full text's length in UTF-16 units, before any cut.
	Length    int    `json:"length"`
	Truncated bool   `json:"truncated,omitempty"`
	Ref       string `json:"ref,omitempty"`
	// Data is the answer of a Plain().Extract with a schema.
	Data json.RawMessage `json:"data,omitempty"`
	Call
}

const extractFn = `function(max) {
	const t = (this.innerText !== undefined ? this.innerText : this.textContent) || '';
	return {text: t.length > max ? t.slice(0, max) : t, length: t.length, url: location.href};
}`

// ExtractExpression is the Runtime.evaluate expression Extract sends for the
// whole page (no Target) with MaxChars maxChars: the page function applied
// to the body. Benchmarks send it on a raw connection to compare the same
// work in the browser. maxChars is not checked here (Extract checks it).
func ExtractExpression(maxChars int) string {
	if maxChars == DefaultExtractMaxChars {
		return defaultExtractExpr
	}
	return extractExpr(maxChars)
}

func extractExpr(maxChars int) string {
	return fmt.Sprintf(`(%s).call(document.body || document.documentElement, %d)`, extractFn, maxChars)
}

// defaultExtractExpr is the expression of every Extract without MaxChars,
// built once.
var defaultExtractExpr = extractExpr(DefaultExtractMaxChars)

// Extract returns the visible text (innerText) of the page's body or of the
// target element, cut to MaxChars.
func (p *Page) Extract(ctx context.Context, in ExtractInput) (ExtractResult, error) {
	const op = "extract"
	max := in.MaxChars
	switch {
	case max == 0:
		max = DefaultExtractMaxChars
	case max < 0 || max > MaxExtractChars:
		return ExtractResult{}, invalidInput(op, fmt.Sprintf("max_chars must be 1–%d", MaxExtractChars))
	}
	var out struct {
		Text   string `json:"text"`
		Length int    `json:"length"`
		URL    string `json:"url"`
	}
	var res ExtractResult
	if in.Target.empty() {
		if err := p.evaluate(ctx, op, ExtractExpression(max), false, &out); err != nil {
			return res, err
		}
	} else {
		el, done, err := p.element(ctx, op, in.Target)
		defer done()
		if err != nil {
			return res, err
		}
		res.Ref = el.ref
		if err := el.callOn(ctx, op, el.node, extractFn, &out, max); err != nil {
			return res, err
		}
	}
	res.URL, res.Text, res.Length = out.URL, out.Text, out.Length
	res.Truncated = out.Length > max
	return res, nil
}

// LinksInput is the links tool input.
type LinksInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Contains keeps only links whose URL or text contains it
	// (case-insensitive).
	Contains string `json:"contains,omitempty"`
	// Limit is the most links returned: 0 means DefaultLinksLimit, at most
	// MaxLinksLimit; negative or larger values are CodeInvalidInput.
	Limit int `json:"limit,omitempty"`
}

// Link is one link of the page.
type Link struct {
	// Href is the absolute URL.
	Href string `json:"href"`
	// Text is the link's visible text, whitespace collapsed.
	Text string `json:"text"`
}

// LinksResult lists links in document order.
type LinksResult struct {
	URL   string `json:"url"`
	Links []Link `json:"links"`
	// Total is how many links matched before Limit.
	Total int `json:"total"`
	// Truncated is true when Total > len(Links).
	Truncated bool `json:"truncated,omitempty"`
	Call
}

const linksScript = `((filter, limit) => {
	const f = filter.toLowerCase();
	const links = [];
	let total = 0;
	for (const a of document.querySelectorAll('a[href]')) {
		const href = a.href;
		const text = (a.innerText || a.textContent || '').replace(/\s+/g, ' ').trim();
		if (f && !href.toLowerCase().includes(f) && !text.toLowerCase().includes(f)) continue;
		total++;
		if (links.length < limit) links.push({href, text});
	}
	return {url: location.href, links, total};
})(%s, %d)`

// Links lists the page's links (a[href], main document) as href and text,
// filtered by Contains and cut to Limit, in one Runtime.evaluate.
func (p *Page) Links(ctx context.Context, in LinksInput) (LinksResult, error) {
	const op = "links"
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultLinksLimit
	case limit < 0 || limit > MaxLinksLimit:
		return LinksResult{}, invalidInput(op, fmt.Sprintf("limit must be 1–%d (default %d)", MaxLinksLimit, DefaultLinksLimit))
	}
	f, _ := json.Marshal(in.Contains)
	var res LinksResult
	if err := p.evaluate(ctx, op, fmt.Sprintf(linksScript, f, limit), false, &res); err != nil {
		return LinksResult{}, err
	}
	if res.Links == nil {
		res.Links = []Link{}
	}
	res.Truncated = res.Total > len(res.Links)
	return res, nil
}
