package browserbackendtest

import (
	"context"
	"log/slog"
	"sync"
)

// Record is one captured log record with its attributes flattened to
// "group.key" names.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

// LogRecorder is a slog.Handler that keeps every record, for asserting the
// selection log records (module=cdp-factory). Safe for concurrent use. Use
// NewLogRecorder.
type LogRecorder struct {
	mu    *sync.Mutex
	recs  *[]Record
	attrs []slog.Attr
	group string
}

// NewLogRecorder returns a recorder and a logger writing to it.
func NewLogRecorder() (*LogRecorder, *slog.Logger) {
	r := &LogRecorder{mu: &sync.Mutex{}, recs: &[]Record{}}
	return r, slog.New(r)
}

// Enabled implements slog.Handler; every level is kept.
func (r *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (r *LogRecorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	add := func(prefix string, a slog.Attr) {}
	add = func(prefix string, a slog.Attr) {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			p := prefix + a.Key + "."
			if a.Key == "" {
				p = prefix
			}
			for _, g := range v.Group() {
				add(p, g)
			}
			return
		}
		attrs[prefix+a.Key] = v.Any()
	}
	for _, a := range r.attrs {
		add("", a)
	}
	prefix := ""
	if r.group != "" {
		prefix = r.group + "."
	}
	rec.Attrs(func(a slog.Attr) bool { add(prefix, a); return true })
	r.mu.Lock()
	*r.recs = append(*r.recs, Record{Level: rec.Level, Message: rec.Message, Attrs: attrs})
	r.mu.Unlock()
	return nil
}

// WithAttrs implements slog.Handler.
func (r *LogRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(append([]slog.Attr(nil), r.attrs...), as...)
	return &c
}

// WithGroup implements slog.Handler.
func (r *LogRecorder) WithGroup(name string) slog.Handler {
	c := *r
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

// Records returns the captured records.
func (r *LogRecorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), *r.recs...)
}

// Find returns the records whose message is msg.
func (r *LogRecorder) Find(msg string) []Record {
	var out []Record
	for _, rec := range r.Records() {
		if rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

// DiscardLogger returns a logger that drops every record, for tests and
// examples that do not look at logs.
func DiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
