// Package recorder is a flight recorder for browser tool calls: per
// conversation, a bounded record of every call — the backend selection
// (candidates, skips with their reasons, the memo, failover and why), each
// CDP command (method, sizes, duration, outcome; params only redacted and
// capped, results only as a size), the guard's decisions, page events and
// the screenshots taken — exported as JSON lines, as one self-contained HTML
// page, and as OpenTelemetry spans.
//
// A host turns it on for a Tools (tools.Options.Recorder) or for one call
// (NewContext). Recording is off by default and costs nothing then.
//
//	rec := recorder.New(recorder.Options{TracerProvider: tp}) // tp may be nil: no spans
//	tl := tools.New(tools.Options{Selector: sel, Recorder: rec})
//	… tool calls …
//	rec.WriteHTML(w, "conversation-1")
//
// What is never recorded: the text of Input.insertText,
// Input.dispatchKeyEvent and Input.imeSetComposition, any param of a call
// the tools mark sensitive (login, type, file upload, handle dialog),
// cookies and storage (Network.*Cookie*, Storage.*), the other methods
// SecretMethod names, and any command's result beyond its size.
// Spans carry no params at all.
//
// The record of one conversation is a ring bounded by Options.MaxEntries and
// Options.MaxBytes (the oldest entries go first, and are counted in
// Stats.Dropped); at most Options.MaxConversations conversations are kept,
// the least recently recorded one is forgotten first. A Recorder is safe for
// concurrent use.
package recorder
