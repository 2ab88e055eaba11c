package tools

import (
	"context"
	"regexp"
	"strings"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// elementFacts is what the write and credential guards learn about the
// element an action targets. Words never include what a
// user typed into a field: only a control's own text, label, accessible
// name, title, name and id, and the value of button-like inputs.
type elementFacts struct {
	Words    string `json:"words"`
	Tag      string `json:"tag"`
	InForm   bool   `json:"inForm"`
	Submits  bool   `json:"submits"`
	Search   bool   `json:"search"`
	Password bool   `json:"password"`
}

// factsFn runs with this bound to the element (or the focused element).
const factsFn = `function() {
	const el = this.nodeType === 1 ? this : this.parentElement;
	if (!el) return {words: '', tag: '', inForm: false, submits: false, search: false, password: false};
	const ctl = el.closest('button, a, input, select, textarea, [role=button], [role=link], [role=menuitem]') || el;
	const tag = ctl.tagName.toLowerCase();
	const type = (ctl.getAttribute('type') || '').toLowerCase();
	const buttonLike = tag === 'input' && ['submit', 'button', 'reset', 'image'].includes(type);
	const labels = ctl.labels ? Array.from(ctl.labels).map(l => l.innerText).join(' ') : '';
	const own = (tag === 'input' || tag === 'textarea' || tag === 'select') ? '' : (ctl.innerText || '');
	const words = [own, buttonLike ? ctl.value : '', ctl.getAttribute('aria-label'), ctl.title, labels,
		ctl.getAttribute('name'), ctl.id, ctl.getAttribute('placeholder')].filter(Boolean).join(' ').slice(0, 1000);
	const form = ctl.form || ctl.closest('form');
	const submits = !!form && ((tag === 'button' && (type === '' || type === 'submit')) || (tag === 'input' && (type === 'submit' || type === 'image')));
	let search = false;
	if (form) {
		const hints = [form.getAttribute('role'), form.getAttribute('action'), form.id, form.className,
			form.getAttribute('name'), form.getAttribute('aria-label')].join(' ').toLowerCase();
		search = /search/.test(hints) || !!form.querySelector('input[type=search], [role=searchbox]') || !!form.closest('[role=search], search');
	}
	const ac = (ctl.getAttribute('autocomplete') || '').toLowerCase();
	const password = tag === 'input' && (type === 'password' || ac.includes('password'));
	return {words, tag, inForm: !!form, submits, search, password};
}`

// writeWords are the words that make a control look like a write.
var writeWords = regexp.MustCompile(`(?i)\b(submit|buy|purchase|pay|order|checkout|check out|delete|remove|send|confirm|transfer|publish|subscribe|unsubscribe)(s|es|ed|ing)?\b`)

// writeReason decides the write guard for one action: "" when the action
// reads, else why it looks like a write. enter is true when the action
// presses Enter (press_key Enter, type with submit), which submits the
// focused field's form.
func writeReason(op string, f elementFacts, enter bool) string {
	if m := writeWords.FindString(f.Words); m != "" && op != "press_key" || m != "" && enter {
		return "the control says " + strings.ToLower(m)
	}
	switch {
	case op == "click" && f.Submits && !f.Search:
		return "a form submission"
	case enter && f.InForm && !f.Search && f.Tag != "textarea":
		return "a form submission"
	}
	return ""
}

// credentialPatterns are the shapes of secrets the credential guard refuses
// to type.
var credentialPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an AWS access key", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"an API key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)},
	{"an API token", regexp.MustCompile(`\b(ghp|gho|ghu|ghs|github_pat|xox[abprs]|glpat)[-_][A-Za-z0-9_-]{16,}`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"a JWT", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}`)},
	{"a private key", regexp.MustCompile(`-----BEGIN ([A-Z]+ )*PRIVATE KEY-----`)},
}

// credentialShape returns what kind of secret text looks like, or "".
func credentialShape(text string) string {
	for _, p := range credentialPatterns {
		if p.re.MatchString(text) {
			return p.what
		}
	}
	return ""
}

// checkTypedText is the text half of the credential guard: credential-shaped
// text is refused before anything is sent. The error never holds the text.
func checkTypedText(op, text string) error {
	if what := credentialShape(text); what != "" {
		return guardErr(op, &guard.Error{Code: guard.CodeValidationFailed, Param: "text", Rule: guard.RuleCredential,
			Message: "the text looks like " + what + "; credentials are entered with the login tool"})
	}
	return nil
}

// facts reads the elementFacts of t, or of the focused element when t is
// empty.
func (p *Page) facts(ctx context.Context, op string, t Target) (elementFacts, error) {
	var f elementFacts
	if t.empty() {
		err := p.evaluate(ctx, op, `(`+factsFn+`).call(document.activeElement || document.body)`, false, &f)
		return f, err
	}
	el, done, err := p.element(ctx, op, t)
	defer done()
	if err != nil {
		return f, err
	}
	err = el.callOn(ctx, op, el.node, factsFn, &f)
	return f, err
}

// actionCheck returns the write and credential check of an input action on
// t, run by guarded after the page check. enter: the action presses Enter;
// typing: the action types into t.
func actionCheck(op string, t Target, enter, typing bool) func(ctx context.Context, p *Page, g *guard.Guard) error {
	return func(ctx context.Context, p *Page, g *guard.Guard) error {
		if g.AllowWrites() && !typing {
			return nil
		}
		f, err := p.facts(ctx, op, t)
		if err != nil {
			return err
		}
		if typing && f.Password {
			return guardErr(op, &guard.Error{Code: guard.CodeValidationFailed, Param: "target", Rule: guard.RuleCredential,
				Message: "the target is a password field; credentials are entered with the login tool"})
		}
		if g.AllowWrites() {
			return nil
		}
		if why := writeReason(op, f, enter); why != "" {
			return guardErr(op, &guard.Error{Code: guard.CodeForbidden, Param: "allow_writes", Rule: guard.RuleAllowWrites,
				Message: "the action looks like a write (" + why + ") and allow_writes is off"})
		}
		return nil
	}
}

// isEnter reports whether a press_key key is Enter (with or without
// modifiers).
func isEnter(key string) bool {
	i := strings.LastIndexByte(key, '+')
	return strings.EqualFold(key[i+1:], "Enter") || key[i+1:] == "\r" || key[i+1:] == "\n"
}
