// Package custombackend shows that a host application adds a backend kind of
// its own with one Provider and one backend, and nothing else: the selector,
// the mode parser, failover, the reconnect grace, remediation and the status
// report all read the provider's Descriptor.
//
// The kind here, "browser-farm", stands for a hosted browser service that
// workers join and leave: a pool the provider proposes from while a worker is
// connected, and whose changes wake a pinned call waiting out its grace.
// Commands are answered by a stand-in; a real one would forward them to the
// service. See the package's Example for the whole composition.
package custombackend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
)

// Kind is the custom backend's kind.
const Kind browserbackend.Kind = "browser-farm"

// Descriptor declares the kind: pinned by browser_mode "browser-farm" (alias
// "farm"), reached over "farm-wss", waiting out the reconnect grace, with
// advice for a person when no worker is connected.
var Descriptor = browserbackend.Descriptor{
	Kind:      Kind,
	Mode:      "browser-farm",
	Aliases:   []string{"farm"},
	Transport: "farm-wss",
	Grace:     true,
	Remediation: func(a browserbackend.Attempt) []string {
		if a.Code == browserbackend.CodeNoClient {
			return []string{"Start a browser-farm worker and let it join the pool."}
		}
		return []string{"Check the browser-farm service status page."}
	},
}

// Pool is the set of connected workers. It is the Provider (proposing while a
// worker is connected) and a browserbackend.Watcher (a join or leave closes
// the Changed channel). Safe for concurrent use.
type Pool struct {
	mu      sync.Mutex
	workers []string
	changed chan struct{}
	down    bool
}

// SetDown makes every later candidate's commands fail with a transport error,
// as a service that stopped answering would.
func (p *Pool) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{changed: make(chan struct{})} }

// Join adds a worker.
func (p *Pool) Join(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.workers = append(p.workers, id)
	close(p.changed)
	p.changed = make(chan struct{})
}

// Describe implements browserbackend.Provider.
func (p *Pool) Describe() browserbackend.Descriptor { return Descriptor }

// Changed implements browserbackend.Watcher.
func (p *Pool) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Propose implements browserbackend.Provider: a candidate aimed at the first
// worker, or a skip with code no_client when the pool is empty.
func (p *Pool) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.workers) == 0 {
		return browserbackend.Candidate{}, browserbackend.Skip(browserbackend.CodeNoClient, "no browser-farm worker is connected")
	}
	worker, down := p.workers[0], p.down
	return browserbackend.Candidate{
		Reason: "worker " + worker + " connected",
		Build: func(ctx context.Context) (browserbackend.ScopedClient, error) {
			return browserbackend.SendFunc(func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
				if down {
					return nil, browserbackend.TransportError(browserbackend.CodeUnreachable, "the farm does not answer", nil)
				}
				return json.RawMessage(fmt.Sprintf(`{"result":{"type":"string","value":%q}}`, worker)), nil
			}), nil
		},
	}, nil
}
