// Package browserbackendtest is a test kit for host applications that wire
// browserbackend (SEL-15). Nothing here talks to a browser or a hub; it is
// meant for unit tests, like net/http/httptest.
//
// It offers:
//   - Backend, a scriptable fake ScopedClient and EventSource: answers from a
//     Reply func, faults per call number (FailOn: "fail the nth call with a
//     transport error"), recorded commands, Emit for CDP events;
//   - Provider, a fake Provider with knobs for skip, selection error, build
//     error and cooldown key, counting proposals and builds;
//   - Roster, Farm and Reference: a fake hub roster of clients {id,
//     interface, actor}, a build farm that records and scripts builds per
//     backend kind, and providers that follow the SEL-3 rules against them
//     (extension, host-bridge, cdp-inspect, local), so a host app can test
//     its selector wiring, cooldowns and reconnect grace end to end;
//   - LogRecorder, a slog.Handler that keeps records for asserting the SEL-11
//     signals;
//   - TransportErr, DispatchedTransportErr, ProtocolErr and JSON helpers.
//
// Everything is safe for concurrent use and works inside a testing/synctest
// bubble (create the values inside the bubble).
package browserbackendtest
