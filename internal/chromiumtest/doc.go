// Package chromiumtest starts real headless Chromium for tests and makes
// sure it never outlives them.
//
// Start launches $BROWSERCHAIN_CHROMIUM (default /usr/bin/chromium) with
// --remote-debugging-port=0, a fresh user-data dir and the quiet-start flags
// (BaseArgs), in its own process group with Pdeathsig SIGKILL. It reads the
// port and browser WebSocket path from <user-data-dir>/DevToolsActivePort
// and registers a t.Cleanup that SIGKILLs the whole group and waits for every
// member to exit. Kill does the same on demand (failover tests).
//
// FixtureServer serves test pages from 127.0.0.1 only; AssertNoProcesses
// scans /proc for processes whose command line mentions a test's profile.
//
// Typical use:
//
//	b := chromiumtest.Start(t, chromiumtest.WithWindowSize(1600, 1200))
//	srv := chromiumtest.FixtureServer(t, nil)
//	// dial b.BrowserWSURL, navigate to srv.URL+"/noise" …
//	b.Kill()
//	chromiumtest.AssertNoProcesses(t, b.UserDataDir, 10*time.Second)
package chromiumtest
