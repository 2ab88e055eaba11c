// Package vellumtest is a test client that speaks to a browserchain server
// exactly as the Vellum assistant's own Chrome extension does, for host
// applications to test their server against the real client's wire
// behaviour without installing that extension.
//
// On the wire it pairs with an empty JSON body from the Vellum dev
// extension's Origin and no client id; opens GET /v1/events with the token,
// X-Vellum-Client-Id and X-Vellum-Interface-Id but no Origin and no
// Last-Event-ID; parses frames the way the extension's own parser does
// (only "data: " lines, event: and id: ignored); answers every request on
// its own goroutine with content as a string, never retrying a refused
// result; reports errors as the extension does (a CDP error encoded twice,
// attach and resolve failures in plain text); posts CDP events with only a
// bearer token and nothing naming their tab, and invalidations with the
// clientId in the body; answers the Vellum.* methods in their real shapes
// (createTab opens an active about:blank and names it with a string id).
//
// Behind it, a real Chromium is driven through its browser-level DevTools
// WebSocket the way the extension drives chrome.debugger: tabs get small
// decimal ids, each is attached once at tab level, a cdpSessionId of
// decimal digits names a tab and anything else a CDP target id, and
// commands without one go to the active tab (the one last created or
// selected).
//
//	c, err := vellumtest.Start(ctx, vellumtest.Options{
//		ServerURL:    srv.URL,              // the server under test
//		BrowserWSURL: browser.BrowserWSURL, // a headless Chromium the test started
//	})
//	defer c.Close()
//
// With Options.Answer set instead of BrowserWSURL, the same client answers
// from a function rather than a browser: the wire is unchanged, so many such
// clients load a server's side of it (its streams, routing and result
// routes) without a browser each. Options.ResultSocket sends results over
// the result socket, as this repository's reference extension does, instead
// of one POST each.
package vellumtest
