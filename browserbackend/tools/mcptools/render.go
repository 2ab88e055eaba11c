package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// The text content of each result: short, for a model to read; the full
// result is the structured content.

func navigateText(r tools.NavigateResult) string {
	if r.StillLoading {
		return fmt.Sprintf("Opened %s — %q (backend %s); the page is still loading (readyState %s): what has loaded can be read with browser_snapshot.",
			r.URL, r.Title, r.Backend, r.ReadyState)
	}
	return fmt.Sprintf("Loaded %s — %q (backend %s). Call browser_snapshot to read the page.", r.URL, r.Title, r.Backend)
}

func snapshotText(r tools.SnapshotResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Page %s — %q (backend %s)\n", r.URL, r.Title, r.Backend)
	// The tree's text ends with its own line when max_nodes cut it.
	b.WriteString(r.Text)
	for _, f := range r.SkippedFrames {
		fmt.Fprintf(&b, "\n[frame not read: %s]", f)
	}
	return b.String()
}

func screenshotText(r tools.ScreenshotResult) string {
	s := fmt.Sprintf("Screenshot of %s: %d×%d px %s, %d bytes, sha256 %s, saved at %s (backend %s).",
		r.URL, r.Width, r.Height, r.MediaType, r.Size, r.SHA256, r.Path, r.Backend)
	if r.Clipped {
		s += " The full page was cut at the maximum height."
	}
	return s
}

func actionText(verb string) func(tools.ActionResult) string {
	return func(r tools.ActionResult) string {
		what := "the page"
		if r.Ref != "" {
			what = r.Ref
		}
		return fmt.Sprintf("Done: %s %s (backend %s).", verb, what, r.Backend) + effectsText(r.Effects)
	}
}

// effectsText says what an action caused, and what to do next.
func effectsText(e tools.Effects) string {
	var b strings.Builder
	if n := e.Navigated; n != nil {
		fmt.Fprintf(&b, " The page navigated to %s (%q)", n.URL, n.Title)
		if n.StillLoading {
			b.WriteString(", still loading")
		}
		b.WriteString(".")
	}
	for _, u := range e.Opened {
		fmt.Fprintf(&b, " It opened a new window: %s (browser_tabs lists it).", u)
	}
	for _, d := range e.Downloads {
		fmt.Fprintf(&b, " It started a download of %q (%s)", d.FileName, d.State)
		if d.Path != "" {
			fmt.Fprintf(&b, ", saved as %s (%d bytes, %s, sha256 %s)", d.Path, d.Size, d.MediaType, d.SHA256)
		} else if d.NotSaved != "" {
			b.WriteString(": " + d.NotSaved)
		}
		b.WriteString(".")
	}
	if e.FileChooser != nil {
		b.WriteString(" It opened a file chooser (not shown): call browser_file_upload on the same element with the files.")
	}
	b.WriteString(" Take a new browser_snapshot if the page changed.")
	return b.String()
}

func extractText(r tools.ExtractResult) string {
	if r.Truncated {
		return fmt.Sprintf("%s\n[text truncated: %d of %d characters; raise max_chars to see more]", r.Text, len([]rune(r.Text)), r.Length)
	}
	return r.Text
}

func linksText(r tools.LinksResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d links on %s", r.Total, r.URL)
	if r.Truncated {
		fmt.Fprintf(&b, " (first %d shown; raise limit or use contains)", len(r.Links))
	}
	b.WriteString(":")
	for _, l := range r.Links {
		fmt.Fprintf(&b, "\n- %s %s", l.Href, l.Text)
	}
	return b.String()
}

func loginText(r tools.LoginResult) string {
	s := fmt.Sprintf("Filled %d field(s) from the vault", r.Filled)
	if r.Submitted {
		s += " and submitted"
	}
	return fmt.Sprintf("%s; the page is %s (backend %s). Take a new browser_snapshot to see the result.", s, r.URL, r.Backend)
}

func releaseText(verb string, r tools.ReleaseResult) string {
	if len(r.Tabs) == 0 && r.Forgot == "" {
		return verb + ": the conversation held no browser."
	}
	parts := make([]string, 0, len(r.Tabs))
	for _, t := range r.Tabs {
		state := "released (left open)"
		switch {
		case t.Gone:
			state = "already closed"
		case t.Closed:
			state = "closed"
		}
		parts = append(parts, fmt.Sprintf("%s tab %s %s", t.Kind, t.Tab.ID, state))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s: released the %s backend.", verb, r.Forgot)
	}
	return verb + ": " + strings.Join(parts, "; ") + "."
}

func statusText(r tools.StatusReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "browser_mode %s; auto tries %v.\n", r.Mode, r.AutoOrder)
	for _, bs := range r.Backends {
		state, why := "available", bs.Reason
		if !bs.Available {
			state = "unavailable"
			if bs.Message != "" { // what the preflight or the probe found
				why = bs.Message
			}
		}
		fmt.Fprintf(&b, "- %s: %s", bs.Kind, state)
		if why != "" {
			fmt.Fprintf(&b, " (%s)", why)
		}
		b.WriteString("\n")
	}
	if r.RecommendedKind != "" {
		fmt.Fprintf(&b, "Recommended: %s", r.RecommendedKind)
		if r.RecommendedMode != "" {
			fmt.Fprintf(&b, " (browser_mode %s)", r.RecommendedMode)
		}
		b.WriteString(".\n")
	}
	if len(r.UserActions) > 0 {
		b.WriteString("The user can:\n")
		for _, a := range r.UserActions {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// toolError is a failure returned to the client as a tool error: its text is
// errorText, errors.As still reaches the cause.
type toolError struct{ err error }

func (e toolError) Error() string { return errorText(e.err) }
func (e toolError) Unwrap() error { return e.err }

// errorText says what went wrong and what to do about it: for a
// selection failure the report of every attempt with its remediation; for
// an invalid browser_mode the accepted values; otherwise the tools error and
// the next step for its code.
func errorText(err error) string {
	var se *browserbackend.SelectionError
	if errors.As(err, &se) {
		return strings.TrimRight(se.Report(), "\n") +
			"\nCall browser_status to see which browsers are available, or retry with browser_mode auto."
	}
	var te *tools.Error
	if !errors.As(err, &te) {
		if errors.Is(err, ErrClosed) {
			return "The browser tool server is shutting down; no call can run. Reconnect to a running server."
		}
		return err.Error()
	}
	var be *browserbackend.Error
	cause := te.Message
	if errors.As(te.Err, &be) && be.Message != "" {
		cause = be.Message
	} else if te.Err != nil && cause == "" {
		cause = te.Err.Error()
	}
	if text, ok := approvalText(te); ok {
		return text
	}
	switch te.Code {
	case tools.CodeInvalidMode:
		return "browser_" + te.Op + " refused: " + cause + ". Omit browser_mode to let the chain choose (auto)."
	case tools.CodeInvalidInput:
		return "browser_" + te.Op + " refused: " + cause + ". Fix the arguments and call again."
	case tools.CodeNotFound:
		return "browser_" + te.Op + ": " + cause + ". Take a new browser_snapshot and use a ref from it, or a CSS selector that matches."
	case tools.CodeTimeout:
		return "browser_" + te.Op + " timed out: " + cause + ". Raise timeout_ms (at most 300000), or check with browser_snapshot what the page shows."
	case tools.CodeNavigationFailed:
		return "browser_" + te.Op + " failed: " + cause + ". Check the URL; the site may be down or unreachable from this browser."
	case tools.CodeForbidden:
		return "browser_" + te.Op + " refused by the browser policy: " + guardCause(te) + ". Do not retry it; ask the user if it must be allowed."
	case tools.CodeValidationFailed:
		return "browser_" + te.Op + " refused: " + guardCause(te) + ". Use browser_login for credentials; fix the arguments otherwise."
	case tools.CodeFeatureNotConfigured:
		return "browser_" + te.Op + " is not available on this server: " + guardCause(te) + "."
	case guard.CodeProviderError:
		if !errors.As(te, new(*guard.Error)) { // the model's failure
			return "browser_" + te.Op + " failed: " + chainText(te) + ". Read the page with browser_snapshot and act by ref."
		}
		return "browser_" + te.Op + " failed: " + guardCause(te) + ". Check the name with the user; do not guess it."
	case tools.CodeDialogOpen:
		return "browser_" + te.Op + ": " + cause + ". Call browser_handle_dialog with accept true or false; nothing else runs on the page until then."
	case tools.CodeNoDialog:
		return "browser_" + te.Op + ": no dialog is open on the page. Take a new browser_snapshot to see it."
	case tools.CodePageError:
		return "browser_" + te.Op + ": a script in the page failed: " + cause + ". Take a new browser_snapshot; the page may have changed."
	}
	if be != nil && be.Class == browserbackend.ClassTransport {
		return "browser_" + te.Op + ": the browser stopped answering (" + te.Error() + "). Call again; call browser_status if it keeps failing."
	}
	return te.Error()
}

// chainText is te's text without the package prefixes.
func chainText(te *tools.Error) string {
	return strings.ReplaceAll(strings.TrimPrefix(te.Error(), "tools: "), "mcptools: ", "")
}

// approvalText is the text of an approval refusal; false for any other
// error.
func approvalText(te *tools.Error) (string, bool) {
	switch te.Code {
	case tools.CodeApprovalDenied:
		return "browser_" + te.Op + " was not approved: " + approvalCause(te) + ". Do not retry it unless the user asks.", true
	case tools.CodeApprovalTimeout:
		return "browser_" + te.Op + " got no approval before its deadline. Ask the user, or call again with a larger timeout_ms.", true
	case tools.CodeApprovalUnavailable:
		return "browser_" + te.Op + " needs an approval that cannot be asked: " + approvalCause(te) + ".", true
	}
	return "", false
}

// approvalCause is what an approval refusal says: the message of the
// innermost *tools.Error (the approval's own, under an act's action), or
// for approval_unavailable its cause; an act's action is named.
func approvalCause(te *tools.Error) string {
	inner := te
	for next := (*tools.Error)(nil); errors.As(inner.Err, &next); {
		inner = next
	}
	msg := inner.Message
	if inner.Code == tools.CodeApprovalUnavailable && inner.Err != nil {
		msg = strings.TrimPrefix(inner.Err.Error(), "mcptools: ")
	}
	if inner != te {
		msg = te.Message + ": " + msg
	}
	return msg
}

// guardCause is the refusal of a guard, without the tools' own prefix.
func guardCause(te *tools.Error) string {
	var ge *guard.Error
	if errors.As(te, &ge) {
		return strings.TrimPrefix(ge.Error(), "guard: ")
	}
	return te.Message
}

// errorCode is the code logged for a failure.
func errorCode(err error) string {
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return "error"
}

// SnapshotSummary is the structured content of browser_snapshot: the tree
// itself is sent once, as the text content the model reads (one element per
// line with its ref); sending it again as JSON nodes would double the bytes
// on the wire and the client's parse time for nothing.
type SnapshotSummary struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// Nodes is the number of tree lines in the text, Refs how many of them
	// carry a ref.
	Nodes     int      `json:"nodes"`
	Refs      int      `json:"refs"`
	Truncated bool     `json:"truncated,omitempty"`
	Skipped   []string `json:"skippedFrames,omitempty"`
	tools.Call
}

func summarizeSnapshot(r tools.SnapshotResult) SnapshotSummary {
	sum := SnapshotSummary{URL: r.URL, Title: r.Title, Nodes: len(r.Nodes), Truncated: r.Truncated,
		Skipped: r.SkippedFrames, Call: r.Call}
	for _, n := range r.Nodes {
		if n.Ref != "" {
			sum.Refs++
		}
	}
	return sum
}

// ExtractSummary is the structured content of browser_extract: the text is
// the text content, sent once.
type ExtractSummary struct {
	URL string `json:"url"`
	// Chars is the number of characters returned in the text content;
	// Length the full text's length in UTF-16 units, before any cut.
	Chars     int    `json:"chars"`
	Length    int    `json:"length"`
	Truncated bool   `json:"truncated,omitempty"`
	Ref       string `json:"ref,omitempty"`
	// Data is the answer of an extract with a schema (the text content
	// holds it too).
	Data json.RawMessage `json:"data,omitempty"`
	tools.Call
}

func summarizeExtract(r tools.ExtractResult) ExtractSummary {
	return ExtractSummary{URL: r.URL, Chars: len([]rune(r.Text)), Length: r.Length, Truncated: r.Truncated, Ref: r.Ref, Data: r.Data, Call: r.Call}
}

// dialogText is the note of a result that met a JavaScript dialog.
func dialogText(d tools.DialogEvent) string {
	switch d.Handled {
	case "":
		return "A JavaScript " + d.String() + " opened and is still open: nothing else runs on the page until " +
			"browser_handle_dialog accepts or dismisses it."
	default:
		return "A JavaScript " + d.String() + " was " + d.Handled + "."
	}
}
