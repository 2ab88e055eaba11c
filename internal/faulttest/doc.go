// Package faulttest holds the fault matrix: tests over real
// processes that inject one fault into each backend — local, cdp-inspect,
// host-bridge, extension — while a command is in flight, and check that the
// command ends promptly with a typed error of the class that decides
// failover, that the next invocation recovers, and that nothing leaks
// (goroutines through goleak, processes through internal/chromiumtest).
//
// The faults: the browser killed, the page's renderer killed (a crashed
// tab), the Playwright driver killed (local), the browser stopped with
// SIGSTOP and resumed (a stalled socket), the client vanished (bridge or
// extension gone from the hub), an answer larger than the transport's cap,
// and a command after Close. The package has no non-test code besides this
// comment.
package faulttest
