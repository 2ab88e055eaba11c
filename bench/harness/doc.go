// Package harness is the measuring side of bench/cmd/benchreport, the
// benchmark harness. It lives in its own module (bench/) so the
// peer libraries it compares against — github.com/chromedp/chromedp — stay
// out of browserchain's go.mod.
//
// A World is one set-up shared by all figures: one headless Chromium (its own
// process group, killed by Close) with the reference extension loaded, the
// runtime side (eventhub + hostproxy + auth, on 127.0.0.1) with that extension
// and an in-process hostproxy/bridge connected, fixture pages, and one local
// (Playwright) browser. Its Paths send a CDP command to a page over a raw
// WebSocket (the floor), cdp-inspect, chromedp, host-bridge, the extension,
// local, and through the Selector/Client.
//
// The Measure… functions each produce one section of BENCHMARKS.md:
// MeasureEvaluate (round trips, interleaved in a shuffled order per round),
// MeasureWorker (a fetch POST vs a WebSocket message inside the extension's
// service worker), MeasureScreenshots (time and this process's heap),
// MeasureFailover, MeasureColdStart, MeasureHubThroughput and MeasureHubStall.
// Results.Render writes the report and Results.Targets judges the goals.
//
// Nothing here is safe for concurrent use; a run is sequential by design, so
// that one measurement never competes with another.
package harness
