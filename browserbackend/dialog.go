package browserbackend

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// Dialog is a JavaScript dialog (alert, confirm, prompt, beforeunload) open
// on a tab, as Page.javascriptDialogOpening reports it. While it is open the
// page's renderer answers no command; Page.handleJavaScriptDialog closes it.
type Dialog struct {
	// Type is "alert", "confirm", "prompt" or "beforeunload".
	Type    string `json:"type"`
	Message string `json:"message"`
	// DefaultPrompt is a prompt's default answer.
	DefaultPrompt string `json:"defaultPrompt,omitempty"`
	// URL is the URL of the frame that opened the dialog.
	URL string `json:"url,omitempty"`
}

// String renders the dialog for a person: `alert "hi"`.
func (d Dialog) String() string {
	s := d.Type + " " + strconv.Quote(d.Message)
	if d.Type == "prompt" && d.DefaultPrompt != "" {
		s += " (default " + strconv.Quote(d.DefaultPrompt) + ")"
	}
	return s
}

// Dialog events and the command that answers a dialog.
const (
	MethodDialogOpening = "Page.javascriptDialogOpening"
	MethodDialogClosed  = "Page.javascriptDialogClosed"
	MethodHandleDialog  = "Page.handleJavaScriptDialog"
)

// DialogWatcher is implemented by backends that watch their tab for
// dialogs from Build on and between calls (Page events stay enabled on the
// tab's session while the provider keeps it). OpenDialog reports the dialog
// open on the tab now. While one is open such a backend fails every new
// command that would wait for the renderer with ClassProtocol and
// CodeDialogOpen, at once and unsent; Page.handleJavaScriptDialog and
// browser-side commands still run. Safe for concurrent use.
type DialogWatcher interface {
	OpenDialog() (Dialog, bool)
}

// OpenDialog returns the dialog open on the sticky backend's tab, and false
// when there is none, before a backend was selected, or when the backend is
// not a DialogWatcher.
func (c *Client) OpenDialog() (Dialog, bool) {
	c.mu.Lock()
	b := c.sticky
	c.mu.Unlock()
	if w, ok := b.(DialogWatcher); ok {
		return w.OpenDialog()
	}
	return Dialog{}, false
}

// DialogState is a tab's open dialog as its events report it, for backends
// implementing DialogWatcher. The zero value has no dialog open; it is safe
// for concurrent use.
type DialogState struct {
	mu   sync.Mutex
	open *Dialog
}

// Observe updates the state from one of the tab's events; other methods
// are ignored.
func (s *DialogState) Observe(method string, params json.RawMessage) {
	switch method {
	case MethodDialogOpening:
		var d Dialog
		if json.Unmarshal(params, &d) != nil {
			return
		}
		s.mu.Lock()
		s.open = &d
		s.mu.Unlock()
	case MethodDialogClosed:
		s.Clear()
	}
}

// Clear forgets the open dialog (the tab navigated away or was answered).
func (s *DialogState) Clear() {
	s.mu.Lock()
	s.open = nil
	s.mu.Unlock()
}

// Open returns the open dialog, if any.
func (s *DialogState) Open() (Dialog, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return Dialog{}, false
	}
	return *s.open, true
}

// Blocked returns the error a DialogWatcher gives a command for method
// while a dialog is open, and nil when none is open or method does not
// need the renderer (Page.handleJavaScriptDialog, Target.*, Browser.*).
func (s *DialogState) Blocked(k Kind, method string) *Error {
	d, ok := s.Open()
	if !ok {
		return nil
	}
	return DialogBlocks(k, method, d)
}

// DialogBlocks returns the error of a command for method on a tab where d
// is open, and nil when method does not wait for the renderer
// (Page.handleJavaScriptDialog, Target.*, Browser.*).
func DialogBlocks(k Kind, method string, d Dialog) *Error {
	if method == MethodHandleDialog || strings.HasPrefix(method, "Target.") || strings.HasPrefix(method, "Browser.") {
		return nil
	}
	return &Error{Backend: k, Method: method, Class: ClassProtocol, Code: CodeDialogOpen,
		Message: "a JavaScript " + d.String() + " is open on the tab"}
}
