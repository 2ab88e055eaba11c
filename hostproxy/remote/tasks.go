package remote

import "github.com/browserchain/browserchain/browserbackend"

// The error codes the reference extension answers a remote task's command
// with; each arrives as a ClassProtocol *browserbackend.Error (no failover:
// the browser answered).
const (
	// CodeTabNotOwned: the tab is neither created, borrowed nor observed
	// by the task, is controlled by another task, or lies inside an Agent
	// Window (borrow it from a regular window).
	CodeTabNotOwned = "tab_not_owned"
	// CodeBorrowDeclined: the browser user declined the borrow.
	CodeBorrowDeclined = "borrow_declined"
	// CodeUnsupported: remote upload and download (the CDP methods that
	// move files between the page and the browser's machine).
	CodeUnsupported = "unsupported"
	// CodeHelpPending: input to a tab whose Vellum.requestHelp waits for
	// the browser user; only the user answers it.
	CodeHelpPending = "help_pending"
)

// Code sentinels, for errors.Is.
var (
	ErrTabNotOwned    = &browserbackend.Error{Code: CodeTabNotOwned}
	ErrBorrowDeclined = &browserbackend.Error{Code: CodeBorrowDeclined}
	ErrUnsupported    = &browserbackend.Error{Code: CodeUnsupported}
	ErrHelpPending    = &browserbackend.Error{Code: CodeHelpPending}
)

// The outcome field of a Vellum.requestHelp result
// ({"outcome":"answered"|"cancelled"}).
const (
	// HelpAnswered: the browser user clicked Done.
	HelpAnswered = "answered"
	// HelpCancelled: the user clicked Cancel, the page removed the help
	// bar, or the task's connection ended.
	HelpCancelled = "cancelled"
)
