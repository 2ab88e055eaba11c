package tools

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// HistoryInput is the input of browser_navigate_back, browser_navigate_forward
// and browser_reload.
type HistoryInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	// TimeoutMs bounds the whole call; 0 means DefaultNavigateTimeout.
	TimeoutMs int `json:"timeout_ms,omitempty"`
}

// HistoryResult is the page a history step or a reload landed on.
type HistoryResult struct {
	ActionNavigation
	Call
}

// Back goes one entry back in the tab's session history
// (Page.getNavigationHistory, Page.navigateToHistoryEntry) and waits for the
// entry's document to load, as an action waits for a navigation it started.
// A tab with no earlier entry is CodeInvalidInput and nothing is sent.
func (p *Page) back(ctx context.Context) (HistoryResult, error) {
	return p.historyStep(ctx, "navigate_back", -1)
}

func (p *Page) forward(ctx context.Context) (HistoryResult, error) {
	return p.historyStep(ctx, "navigate_forward", +1)
}

func (p *Page) historyStep(ctx context.Context, op string, delta int64) (HistoryResult, error) {
	h, err := cdp.Call(ctx, p.s, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return HistoryResult{}, wrap(op, err)
	}
	i := h.CurrentIndex + delta
	if i < 0 || i >= int64(len(h.Entries)) {
		what := "no earlier page in this tab's history"
		if delta > 0 {
			what = "no later page in this tab's history"
		}
		return HistoryResult{}, invalidInput(op, what)
	}
	id := h.Entries[i].ID
	return p.reloadLike(ctx, op, func() error {
		_, err := cdp.Call(ctx, p.s, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: id})
		return err
	})
}

// reload reloads the tab's document (Page.reload) and waits for it to load.
func (p *Page) reload(ctx context.Context) (HistoryResult, error) {
	return p.reloadLike(ctx, "reload", func() error {
		_, err := cdp.Call(ctx, p.s, page.Reload, page.ReloadParams{})
		return err
	})
}

// reloadLike runs do, which navigates the main frame, and waits for the
// navigation as an action's effects are awaited: to the commit, then to the
// load event; a deadline after the commit reports the document still
// loading. A step that commits nothing (a cancelled navigation) reports the
// page as it is.
func (p *Page) reloadLike(ctx context.Context, op string, do func() error) (HistoryResult, error) {
	tree, err := cdp.Call(ctx, p.s, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return HistoryResult{}, wrap(op, err)
	}
	if tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		return HistoryResult{}, &Error{Op: op, Code: CodeBackend, Message: "the tab reported no main frame"}
	}
	e, err := p.watchEffects(ctx, op)
	if err != nil {
		return HistoryResult{}, err
	}
	defer e.close()
	if err := do(); err != nil {
		return HistoryResult{}, wrap(op, err)
	}
	nav, err := e.await(ctx, p, op, map[cdp.FrameID]bool{tree.FrameTree.Frame.ID: true})
	if err != nil {
		return HistoryResult{}, err
	}
	if nav == nil {
		if nav, err = p.readNavigation(ctx, op); err != nil || nav == nil {
			return HistoryResult{}, timeoutIfNil(op, err)
		}
	}
	return HistoryResult{ActionNavigation: *nav}, nil
}

// timeoutIfNil is err, or CodeTimeout when the page could not be read before
// the deadline.
func timeoutIfNil(op string, err error) error {
	if err != nil {
		return err
	}
	return &Error{Op: op, Code: CodeTimeout, Message: "the deadline passed before the page could be read"}
}
