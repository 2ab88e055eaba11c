package browserbackendtest

import (
	"context"
	"slices"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
)

// BuildRecord is one candidate build a Farm performed.
type BuildRecord struct {
	Kind browserbackend.Kind
	// ClientID is the hub client the candidate was aimed at (extension and
	// host-bridge), empty otherwise.
	ClientID string
}

// Farm builds the backends of the reference providers and records every
// build. By default each build returns a fresh NewBackend(kind, nil); OnBuild
// scripts a kind (return an error to fail construction, or a Backend with
// FailOn to fail at send). Safe for concurrent use; the zero value is ready.
type Farm struct {
	mu       sync.Mutex
	on       map[browserbackend.Kind]func(clientID string) (*Backend, error)
	builds   []BuildRecord
	backends []*Backend
}

// OnBuild makes every later build of kind k call f. It returns f's farm for
// chaining.
func (f *Farm) OnBuild(k browserbackend.Kind, fn func(clientID string) (*Backend, error)) *Farm {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on == nil {
		f.on = make(map[browserbackend.Kind]func(string) (*Backend, error))
	}
	f.on[k] = fn
	return f
}

// FailBuild makes every later build of kind k fail with err.
func (f *Farm) FailBuild(k browserbackend.Kind, err error) *Farm {
	return f.OnBuild(k, func(string) (*Backend, error) { return nil, err })
}

// FailSend makes every backend of kind k built later fail its first command
// with err.
func (f *Farm) FailSend(k browserbackend.Kind, err error) *Farm {
	return f.OnBuild(k, func(string) (*Backend, error) { return NewBackend(k, nil).FailOn(1, err), nil })
}

// Build constructs a backend of kind k aimed at clientID.
func (f *Farm) Build(ctx context.Context, k browserbackend.Kind, clientID string) (browserbackend.ScopedClient, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.builds = append(f.builds, BuildRecord{Kind: k, ClientID: clientID})
	fn := f.on[k]
	f.mu.Unlock()
	var (
		b   *Backend
		err error
	)
	if fn != nil {
		b, err = fn(clientID)
	} else {
		b = NewBackend(k, nil)
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.backends = append(f.backends, b)
	f.mu.Unlock()
	return b, nil
}

// Builds returns the builds performed so far, in order.
func (f *Farm) Builds() []BuildRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.builds)
}

// BuiltKinds returns the kinds of the builds performed so far, in order.
func (f *Farm) BuiltKinds() []browserbackend.Kind {
	var out []browserbackend.Kind
	for _, b := range f.Builds() {
		out = append(out, b.Kind)
	}
	return out
}

// Backends returns the backends built so far (successful builds only), in
// order.
func (f *Farm) Backends() []*Backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.backends)
}
