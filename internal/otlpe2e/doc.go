// Package otlpe2e is an end-to-end test of the flight recorder's spans over
// OTLP/HTTP: a real tool call on a real browser, exported by the
// OpenTelemetry SDK's otlptracehttp exporter to an OTLP/HTTP receiver that
// decodes the official OTLP protobuf types. It is a module of its own, so
// that the exporter's dependencies (protobuf, gRPC's packages) stay out of
// the main go.mod; `make test` runs it. It has no non-test code.
package otlpe2e
