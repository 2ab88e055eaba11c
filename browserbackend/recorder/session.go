package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/textcap"
)

// Session returns s with every command recorded in c: method, sizes,
// duration, outcome and redacted params (see Redact), each as a child span
// of the call's when the ctx of the command carries it. Events pass through
// unrecorded. On a nil c it returns s.
func (c *Call) Session(s cdp.Session) cdp.Session {
	if c == nil {
		return s
	}
	return &session{c: c, s: s}
}

type session struct {
	c *Call
	s cdp.Session
}

func (rs *session) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return rs.s.Subscribe(method)
}

func (rs *session) Call(ctx context.Context, method string, params, result any) error {
	c := rs.c
	start := time.Now()
	c.firstCmd.CompareAndSwap(0, start.UnixNano())
	var span trace.Span
	if c.r.tracer != nil {
		ctx, span = c.r.tracer.Start(ctx, "cdp "+method, trace.WithTimestamp(start),
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(AttrMethod.String(method)))
	}
	raw := encodeParams(params)
	res := &sized{v: result}
	err := rs.s.Call(ctx, method, params, res)
	end := time.Now()

	secret := c.sensitive.Load() || SecretMethod(method)
	cmd := &Command{Method: method, ParamsBytes: len(raw), ResultBytes: res.n, Redacted: secret}
	if !secret {
		cmd.Params = Redact(raw, c.r.opts.MaxParamBytes)
	}
	e := Entry{Time: start, Type: TypeCDP, Duration: end.Sub(start), Command: cmd, Outcome: "ok"}
	if k, ok := rs.s.(interface{ Kind() browserbackend.Kind }); ok {
		e.Backend = string(k.Kind())
	}
	if err != nil {
		e.Outcome, e.Code = "error", errorCode(err)
		if !secret {
			e.Error = textcap.Cut(err.Error(), maxErrorBytes)
		}
	}
	c.push(e)
	if span != nil {
		span.SetAttributes(AttrBackend.String(e.Backend), AttrParamsBytes.Int(cmd.ParamsBytes), AttrResultBytes.Int(cmd.ResultBytes))
		if err != nil {
			span.SetAttributes(AttrCode.String(e.Code))
			span.SetStatus(codes.Error, e.Code)
		}
		span.End(trace.WithTimestamp(end))
	}
	return err
}

// errorCode is the machine-readable code of a command's failure.
func errorCode(err error) string {
	var be *browserbackend.Error
	if errors.As(err, &be) && be.Code != "" {
		return be.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return browserbackend.CodeTimeout
	}
	return "error"
}

// encodeParams returns params as the session sends them, nil for none.
func encodeParams(params any) []byte {
	switch params.(type) {
	case nil, cdp.Empty, *cdp.Empty:
		return nil
	}
	raw, err := jsonv2.Marshal(params)
	if err != nil || string(raw) == "{}" || string(raw) == "null" {
		return nil
	}
	return raw
}

// sized decodes a command's result into v while counting its bytes.
type sized struct {
	v any
	n int
}

func (r *sized) UnmarshalJSONFrom(dec *jsonv2.Decoder) error {
	from := dec.InputOffset()
	var err error
	switch r.v.(type) {
	case nil, *cdp.Empty:
		err = dec.SkipValue()
	default:
		err = jsonv2.UnmarshalDecode(dec, r.v)
	}
	r.n = int(dec.InputOffset() - from)
	return err
}

// UnmarshalJSON serves sessions that decode with encoding/json.
func (r *sized) UnmarshalJSON(b []byte) error {
	r.n = len(b)
	switch r.v.(type) {
	case nil, *cdp.Empty:
		return nil
	}
	return json.Unmarshal(b, r.v)
}

// secretPrefixes are the method prefixes whose params are never recorded:
// typed text, cookies, storage, credentials and headers.
var secretPrefixes = []string{
	"Input.insertText", "Input.dispatchKeyEvent", "Input.imeSetComposition",
	"Storage.", "Fetch.continueWithAuth", "Network.setExtraHTTPHeaders",
	"Fetch.fulfillRequest", "Page.setDocumentContent", "Page.handleJavaScriptDialog",
}

// SecretMethod reports whether a CDP method's params are never recorded:
// those of typed text (Input.insertText, Input.dispatchKeyEvent,
// Input.imeSetComposition), cookies (any method of Network or Storage
// naming a cookie), storage (Storage.*), credentials and headers
// (Fetch.continueWithAuth, Network.setExtraHTTPHeaders), page content
// (Fetch.fulfillRequest, Page.setDocumentContent) and a prompt's answer
// (Page.handleJavaScriptDialog).
func SecretMethod(method string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return strings.Contains(method, "Cookie")
}

// Redact returns the recorded form of a command's encoded params: "" when
// max < 0 or there are none, else at most max bytes of them, cut on a rune
// boundary and ended with "…" when cut. It does not apply SecretMethod;
// callers check it first.
func Redact(raw []byte, max int) string {
	if max < 0 || len(raw) == 0 {
		return ""
	}
	return textcap.Cut(string(raw), max)
}
