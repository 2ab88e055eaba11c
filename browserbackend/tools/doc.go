// Package tools implements the browser operations an assistant calls —
// navigate, snapshot, screenshot, click, type, hover, scroll, press key,
// select option, handle dialog, file upload, wait for, extract, links,
// attach, detach, close and status — over any backend of the browserchain
// chain. Tools holds the conversation's lifecycle; Tools.Act and Tools.Read
// are its page tools, and Tools.Plain the plain-language ones (act,
// observe, extract with an instruction) that Options.Model carries out.
// Options.Approvals names the actions that wait for an approver
// (Options.Approve, or WithApprover per call) before any backend is asked.
//
// Tools is the entry point for a host application: each method is one tool
// call. It validates the input's browser_mode with the Selector's ParseMode
// (and the rest of the input) before any CDP command is sent, takes a fresh
// per-call *browserbackend.Client from the Selector, runs the operation on the
// invocation's page with typed cdproto commands, and closes the Client. The
// result carries the backend that served the call and every attempt.
//
// Page runs the same operations on any cdp.Session without a Selector, for
// example a browserbackend.SessionView or SessionOf(a backend).
//
// Behaviour shared by every backend:
//   - Navigate waits for Page.loadEventFired / Page.frameStoppedLoading of
//     the navigated frame; it never polls. HTTP redirects resolve inside the
//     navigation and the final URL is reported.
//   - Snapshot renders the page's roles and names from one
//     DOMSnapshot.captureSnapshot (roles, names and values computed as
//     Chromium's accessibility tree computes them for HTML; several times
//     faster than reading that tree on a large page), or with
//     Source "accessibility" from Accessibility.getFullAXTree of every frame
//     it can read; each child frame under its iframe element, in document
//     order, a cross-site frame (DOM source) read through its own target;
//     each node's ref is "e<backendDOMNodeId>" ("f<frame key>e<id>" in a
//     cross-site frame), valid across calls while the node lives, accepted
//     by Click, Type, Hover, Scroll, SelectOption, PressKey and Extract. It
//     is complete up to DefaultSnapshotMaxNodes nodes unless MaxNodes says
//     otherwise; a tree cut there ends its text with a line that says so.
//     Ref, MaxDepth, Interactive and Search narrow it, and Diff shows what
//     changed since the conversation's previous snapshot.
//   - Mouse and key input is Input.dispatchMouseEvent / dispatchKeyEvent at
//     the centre of the element's box (DOM.scrollIntoViewIfNeeded,
//     DOM.getBoxModel).
//   - WaitFor on a selector or text runs one awaited Runtime.evaluate whose
//     promise a MutationObserver resolves inside the page (no polling); a
//     navigation meanwhile restarts it on the new document.
//   - Screenshot writes a PNG file and returns its path, SHA-256, size and
//     dimensions; image bytes never travel in a result.
//   - Links returns href and text, filtered by contains, at most limit
//     (default 50, max 200).
//   - Click, PressKey, Type with Submit and SelectOption wait for a
//     navigation they started (to its load, on events) and report it and
//     the windows they opened (Effects).
//   - A JavaScript dialog never wedges a call: it ends the call that meets
//     it, or is answered by the DialogPolicy; HandleDialog answers it.
//   - FileUpload sets files read from Options.UploadDir, carried in the
//     command, so a browser on another machine takes them alike.
//
// The tab is the provider's: the invocation says which one it wants
// (browserbackend.TabRequest) and the backend that serves the call resolves
// it; the tools name no backend.
//
// With Options.Recorder (or recorder.NewContext for one call) every call is
// recorded per conversation: its selection, its CDP commands (params
// redacted), the guard's decision, a dialog it met and its screenshot; see
// package browserbackend/recorder.
//
// Status (and Tools.Status) reports per backend whether it is available, how
// that was verified (preflight or active probe), the auto order, the sticky
// kind, the recommended mode and user actions.
//
// Every failure is an *Error with an op and a code (ErrNotFound,
// ErrTimeout, …) that unwraps to the backend's *browserbackend.Error.
package tools
