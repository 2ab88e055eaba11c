package guard

import (
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
)

// The error vocabulary of the guards. Every refusal of this package,
// and of the tools when a policy refuses, carries one of these codes.
const (
	// CodeForbidden: a rule refused the action (a URL off the allow-list, a
	// private address, a write without allow_writes).
	CodeForbidden = "forbidden"
	// CodeValidationFailed: an input or setting is not acceptable (an empty
	// allowed_domains, credential-shaped text, timeout_minutes out of range).
	CodeValidationFailed = "validation_failed"
	// CodeFeatureNotConfigured: the action needs something the host did not
	// configure (a screenshot catalogue, a vault).
	CodeFeatureNotConfigured = "feature_not_configured"
	// CodeProviderError: a dependency the guard relies on failed (the
	// resolver, the vault, the session store).
	CodeProviderError = "provider_error"
	// CodeContextLocked: the saved login is held by a human_login flow of
	// another session until its lock expires (HTTP 409).
	CodeContextLocked = "context_locked"
)

// Rules named in errors (Error.Rule).
const (
	RuleAllowedDomains = "allowed_domains"
	RuleScheme         = "scheme"
	RulePrivateNetwork = "private_network"
	RuleAllowWrites    = "allow_writes"
	RuleAllowScripts   = "allow_scripts"
	RuleCredential     = "credential_guard"
)

// Error is the one error type of the guards. Code is one of the Code*
// constants, Param the input parameter or setting at fault ("url",
// "allowed_domains", "allow_writes", "text", …), Rule the rule that decided
// (Rule* or a more specific text such as "private_network: 127.0.0.0/8"), and
// URL the URL concerned, when there is one. Error never holds typed text or a
// credential.
//
// It unwraps to a browserbackend ClassPolicy *Error with the same Code, so
// errors.Is(err, browserbackend.ErrPolicy) holds; an *Error with only Code
// (and optionally Param) set is a pattern for errors.Is, e.g. ErrForbidden.
type Error struct {
	Code    string
	Param   string
	Rule    string
	URL     string
	Message string
	// Err is an underlying cause (a resolver or database error), if any.
	Err error
}

// Error formats "guard: <code> [param]: message (url ...; rule ...): cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("guard: ")
	b.WriteString(e.Code)
	if e.Param != "" {
		b.WriteString(" [" + e.Param + "]")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.URL != "" || e.Rule != "" {
		b.WriteString(" (")
		if e.URL != "" {
			b.WriteString("url " + e.URL)
			if e.Rule != "" {
				b.WriteString("; ")
			}
		}
		if e.Rule != "" {
			b.WriteString("rule " + e.Rule)
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the browserbackend ClassPolicy form of e and the cause.
func (e *Error) Unwrap() []error {
	bb := &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: e.Code, Message: e.Message}
	if e.Err != nil {
		return []error{bb, e.Err}
	}
	return []error{bb}
}

// Is matches a pattern *Error whose Code equals e.Code and whose Param, when
// set, equals e.Param.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Code == "" {
		return false
	}
	return t.Code == e.Code && (t.Param == "" || t.Param == e.Param)
}

// Code sentinels, for errors.Is.
var (
	ErrForbidden            = &Error{Code: CodeForbidden}
	ErrValidationFailed     = &Error{Code: CodeValidationFailed}
	ErrFeatureNotConfigured = &Error{Code: CodeFeatureNotConfigured}
	ErrProviderError        = &Error{Code: CodeProviderError}
	ErrContextLocked        = &Error{Code: CodeContextLocked}
)

func forbidden(rawURL, rule, msg string) *Error {
	return &Error{Code: CodeForbidden, Param: "url", URL: rawURL, Rule: rule, Message: msg}
}

func invalid(param, msg string) *Error {
	return &Error{Code: CodeValidationFailed, Param: param, Message: msg}
}
