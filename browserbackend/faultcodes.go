package browserbackend

// Error codes of browser faults that more than one backend reports (issue
// 10's fault matrix). They complete the codes of errors.go.
const (
	// CodeTargetCrashed (ClassTransport): the page's renderer crashed under
	// the command (Chrome's Inspector.targetCrashed, Playwright's page
	// "crash"); commands in flight on that page fail at once instead of at
	// their deadline.
	CodeTargetCrashed = "target_crashed"
	// CodeBrowserGone (ClassTransport): the browser process, or the driver
	// that owns it, exited under the command.
	CodeBrowserGone = "browser_gone"
	// CodePageEvicted (ClassClosed): the conversation's page was closed while
	// idle to honour a page cap; its URL and content are lost.
	CodePageEvicted = "page_evicted"
)
