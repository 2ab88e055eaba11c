package tools

import (
	"context"
	"log/slog"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
)

// Placeholders a login field's value may hold; Login replaces them
// with the vault credential inside the call.
const (
	PlaceholderUsername = "%username%"
	PlaceholderPassword = "%password%"
)

// Vault supplies the credentials of the login tool. Credential
// returns the entry name of inv's actor; an unknown name is an error.
// Implementations must be safe for concurrent use and must not log the
// plaintext.
type Vault interface {
	Credential(ctx context.Context, inv browserbackend.Invocation, name string) (Credential, error)
}

// VaultFunc adapts a function to Vault.
type VaultFunc func(ctx context.Context, inv browserbackend.Invocation, name string) (Credential, error)

// Credential calls f.
func (f VaultFunc) Credential(ctx context.Context, inv browserbackend.Invocation, name string) (Credential, error) {
	return f(ctx, inv, name)
}

// Credential is one vault entry. Its String, GoString and LogValue redact
// both fields, so printing or logging one never shows the plaintext.
type Credential struct {
	Username string
	Password string
}

// String redacts.
func (Credential) String() string { return "tools.Credential{redacted}" }

// GoString redacts.
func (c Credential) GoString() string { return c.String() }

// LogValue redacts.
func (Credential) LogValue() slog.Value { return slog.StringValue("redacted") }

// LoginField is one form field the login tool fills: Target names the
// element, Value the text to enter, normally PlaceholderUsername or
// PlaceholderPassword (placeholders may be embedded in other text).
type LoginField struct {
	Target
	Value string `json:"value"`
}

// LoginInput is the login tool input.
type LoginInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Credential is the vault entry name (e.g. "login:app.example.com").
	Credential string `json:"credential"`
	// Fields are filled in order.
	Fields []LoginField `json:"fields"`
	// Submit, optional, is clicked after the fields are filled.
	Submit Target `json:"submit,omitzero"`
}

// LoginResult is what Login reports: never the credential.
type LoginResult struct {
	// URL is the page's URL afterwards.
	URL string `json:"url"`
	// Filled is the number of fields filled.
	Filled int `json:"filled"`
	// Submitted reports whether Submit was clicked.
	Submitted bool `json:"submitted,omitempty"`
	Call
}

// Login is the login tool: it fetches the credential named in
// in.Credential from Options.Vault, fills each field with its value after
// replacing %username% and %password%, and clicks in.Submit when given. The
// plaintext never enters a result, an error or a log record. It is the one
// way to type a password under a guard; the write guard does not apply to
// its submit (the host allowed it by configuring a vault), the allow-list
// does. Without a vault it fails feature_not_configured; a vault failure is
// provider_error.
func (t *Tools) Login(ctx context.Context, inv browserbackend.Invocation, in LoginInput) (LoginResult, error) {
	const op = "login"
	return run(t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout, secret: true, about: in.Credential,
		check: func() error {
			if t.vault == nil {
				return guardErr(op, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "vault", Message: "no vault is configured"})
			}
			if strings.TrimSpace(in.Credential) == "" {
				return invalidInput(op, "credential is required")
			}
			if len(in.Fields) == 0 {
				return invalidInput(op, "fields is required")
			}
			for _, f := range in.Fields {
				if err := checkTarget(op, f.Target); err != nil {
					return err
				}
			}
			if !in.Submit.empty() {
				return checkTarget(op, in.Submit)
			}
			return nil
		}},
		func(ctx context.Context, p *Page) (LoginResult, error) {
			cred, err := t.vault.Credential(ctx, inv, in.Credential)
			if err != nil {
				// The vault's error is not kept: it could quote what it holds.
				return LoginResult{}, guardErr(op, &guard.Error{Code: guard.CodeProviderError, Param: "credential",
					Message: "the vault did not supply the credential"})
			}
			return p.login(ctx, op, in, cred)
		})
}

func (p *Page) login(ctx context.Context, op string, in LoginInput, cred Credential) (LoginResult, error) {
	repl := strings.NewReplacer(PlaceholderUsername, cred.Username, PlaceholderPassword, cred.Password)
	var res LoginResult
	for _, f := range in.Fields {
		el, done, err := p.element(ctx, op, f.Target)
		defer done()
		if err != nil {
			return LoginResult{}, err
		}
		if _, err := cdp.Call(ctx, el.s, dom.Focus, dom.FocusParams{BackendNodeID: el.node}); err != nil {
			return LoginResult{}, &Error{Op: op, Code: CodeNotFound, Message: "the field cannot take focus"}
		}
		if err := el.callOn(ctx, op, el.node, clearFn, nil); err != nil {
			return LoginResult{}, err
		}
		if _, err := cdp.Call(ctx, p.s, input.InsertText, input.InsertTextParams{Text: repl.Replace(f.Value)}); err != nil {
			// The browser's error is dropped with the command: it names no
			// text, but the command's params held the secret.
			return LoginResult{}, &Error{Op: op, Code: CodeBackend, Message: "the field could not be filled"}
		}
		res.Filled++
	}
	if !in.Submit.empty() {
		if err := p.awaitNavigation(ctx, op, func() error {
			_, err := p.Click(ctx, ElementInput{Target: in.Submit})
			return err
		}); err != nil {
			return LoginResult{}, wrap(op, err)
		}
		res.Submitted = true
	}
	u, err := p.currentURL(ctx, op)
	if err != nil {
		return LoginResult{}, err
	}
	res.URL = u
	return res, nil
}
