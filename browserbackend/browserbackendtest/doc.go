// Package browserbackendtest is a test kit of fakes for host applications
// that wire browserbackend, like net/http/httptest: nothing here talks to a
// browser or a hub, and it imports no backend.
//
// It offers:
//   - Backend, a scriptable fake ScopedClient and EventSource: answers from a
//     Reply func, faults per call number (FailOn: "fail the nth call with a
//     transport error"), recorded commands, Emit for CDP events;
//   - Provider, a fake Provider with knobs for skip, selection error, build
//     error and cooldown key, counting proposals and builds;
//   - Farm, a build farm that records and scripts builds per backend kind
//     (hostproxytest.Reference runs the reference providers' real rules
//     over it);
//   - LogRecorder, a slog.Handler that keeps records for asserting the
//     selector's log signals;
//   - TransportErr, DispatchedTransportErr, ProtocolErr and JSON helpers.
//
// Everything is safe for concurrent use and works inside a testing/synctest
// bubble (create the values inside the bubble).
package browserbackendtest
