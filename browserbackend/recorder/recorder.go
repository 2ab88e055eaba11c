package recorder

import (
	"context"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Options.
const (
	DefaultMaxEntries       = 4096
	DefaultMaxBytes         = 8 << 20
	DefaultMaxConversations = 32
	DefaultMaxParamBytes    = 512
	DefaultMaxShotBytes     = 1 << 20
)

// Options configures a Recorder. The zero value works: every bound has its
// default, and no spans are made.
type Options struct {
	// MaxEntries bounds one conversation's record; the oldest entries are
	// dropped first. 0 means DefaultMaxEntries.
	MaxEntries int
	// MaxBytes bounds the memory one conversation's record holds (Entry
	// sizes as Stats.Bytes counts them, screenshots included). 0 means
	// DefaultMaxBytes.
	MaxBytes int
	// MaxConversations bounds how many conversations are recorded; the one
	// least recently recorded is forgotten first. 0 means
	// DefaultMaxConversations.
	MaxConversations int
	// MaxParamBytes caps a command's recorded params (Command.Params). 0
	// means DefaultMaxParamBytes; negative records no params.
	MaxParamBytes int
	// MaxShotBytes caps the screenshot bytes kept in the record (Shot.Data):
	// a larger image is referenced by path only. 0 means
	// DefaultMaxShotBytes; negative keeps none.
	MaxShotBytes int
	// TracerProvider, optional, receives a span per tool call with a child
	// span per selection attempt and per CDP command. nil: no spans.
	TracerProvider trace.TracerProvider
}

// Recorder keeps the records of the conversations whose tool calls it
// recorded. It is safe for concurrent use; a nil *Recorder records nothing.
type Recorder struct {
	opts   Options
	tracer trace.Tracer // nil without a TracerProvider

	convs     *lru.Cache[string, *convo]
	forgotten atomic.Int64
}

// tracerName is the instrumentation scope of the spans.
const tracerName = "github.com/browserchain/browserchain/browserbackend/recorder"

// New returns a Recorder with opts' bounds.
func New(opts Options) *Recorder {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&opts.MaxEntries, DefaultMaxEntries)
	def(&opts.MaxBytes, DefaultMaxBytes)
	def(&opts.MaxConversations, DefaultMaxConversations)
	def(&opts.MaxParamBytes, DefaultMaxParamBytes)
	def(&opts.MaxShotBytes, DefaultMaxShotBytes)
	r := &Recorder{opts: opts}
	r.convs, _ = lru.NewWithEvict(max(opts.MaxConversations, 1), func(string, *convo) { r.forgotten.Add(1) })
	if opts.TracerProvider != nil {
		r.tracer = opts.TracerProvider.Tracer(tracerName)
	}
	return r
}

// Stats measures one conversation's record.
type Stats struct {
	// Calls is how many tool calls were recorded.
	Calls uint64 `json:"calls"`
	// Entries is how many entries the record holds now.
	Entries int `json:"entries"`
	// Bytes is the memory the entries hold, approximately.
	Bytes int `json:"bytes"`
	// Dropped counts the entries dropped to keep the bounds.
	Dropped int `json:"dropped"`
}

// Stats returns conversation conv's measures, false when it has no record.
func (r *Recorder) Stats(conv string) (Stats, bool) {
	c, ok := r.peek(conv)
	if !ok {
		return Stats{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Calls: c.calls, Entries: c.n, Bytes: c.bytes, Dropped: c.dropped}, true
}

// Conversations returns the ids of the recorded conversations, the least
// recently recorded first.
func (r *Recorder) Conversations() []string {
	if r == nil {
		return nil
	}
	return r.convs.Keys()
}

// Forgotten counts the conversation records dropped: by Forget, or to
// honour MaxConversations.
func (r *Recorder) Forgotten() int64 {
	if r == nil {
		return 0
	}
	return r.forgotten.Load()
}

// Entries returns a copy of conversation conv's record, oldest first; nil
// when it has none.
func (r *Recorder) Entries(conv string) []Entry {
	c, ok := r.peek(conv)
	if !ok {
		return nil
	}
	return c.entries()
}

// Forget drops conversation conv's record.
func (r *Recorder) Forget(conv string) {
	if r != nil {
		r.convs.Remove(conv)
	}
}

func (r *Recorder) peek(conv string) (*convo, bool) {
	if r == nil {
		return nil, false
	}
	return r.convs.Peek(conv)
}

// convo returns conversation id's record, made on first use.
func (r *Recorder) convo(id string) *convo {
	if c, ok := r.convs.Get(id); ok {
		return c
	}
	nc := &convo{id: id, maxEntries: max(r.opts.MaxEntries, 1), maxBytes: r.opts.MaxBytes}
	if prev, ok, _ := r.convs.PeekOrAdd(id, nc); ok {
		return prev
	}
	return nc
}

type ctxKey struct{}

type ctxRecorder struct{ r *Recorder }

// NewContext returns ctx carrying r: tool calls made with it are recorded by
// r instead of their Tools' recorder (a nil r turns recording off for them).
func NewContext(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, ctxKey{}, ctxRecorder{r})
}

// FromContext returns the recorder NewContext put in ctx, and whether there
// was one (r may be nil when the call turned recording off).
func FromContext(ctx context.Context) (r *Recorder, ok bool) {
	v, ok := ctx.Value(ctxKey{}).(ctxRecorder)
	return v.r, ok
}

// convo is one conversation's record: a ring of entries bounded in count
// and bytes.
type convo struct {
	id         string
	maxEntries int
	maxBytes   int

	mu      sync.Mutex
	buf     []Entry // circular; grows up to maxEntries
	head    int     // index of the oldest entry
	n       int
	bytes   int
	dropped int
	calls   uint64
	seq     uint64
}

func (c *convo) nextCall() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return c.calls
}

// push appends e, dropping the oldest entries to keep the bounds. An entry
// whose screenshot alone is over the byte bound loses its bytes.
func (c *convo) push(e Entry) {
	e.Conversation = c.id // before sizing: pop subtracts the same size
	size := e.size()
	if size > c.maxBytes && e.Shot != nil && e.Shot.Data != nil {
		cp := *e.Shot
		cp.Data = nil
		e.Shot = &cp
		size = e.size()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n > 0 && (c.n >= c.maxEntries || c.bytes+size > c.maxBytes) {
		c.popLocked()
	}
	c.seq++
	e.Seq = c.seq
	if c.n == len(c.buf) {
		c.growLocked()
	}
	c.buf[(c.head+c.n)%len(c.buf)] = e
	c.n++
	c.bytes += size
}

func (c *convo) popLocked() {
	old := &c.buf[c.head]
	c.bytes -= old.size()
	*old = Entry{} // release its strings and bytes
	c.head = (c.head + 1) % len(c.buf)
	c.n--
	c.dropped++
}

// growLocked doubles the ring, up to maxEntries, keeping the order.
func (c *convo) growLocked() {
	nb := make([]Entry, min(max(2*len(c.buf), 16), c.maxEntries))
	for i := range c.n {
		nb[i] = c.buf[(c.head+i)%len(c.buf)]
	}
	c.buf, c.head = nb, 0
}

func (c *convo) entries() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Entry, c.n)
	for i := range c.n {
		out[i] = c.buf[(c.head+i)%len(c.buf)]
	}
	return out
}
