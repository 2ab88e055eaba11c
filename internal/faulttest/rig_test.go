//go:build linux

package faulttest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/bridge"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// longDeadline is the deadline of every in-flight command: a fault must end
// the command long before it (the tests assert the error is not a timeout
// and the context is still live), so it is a hang guard, not a threshold.
const longDeadline = 60 * time.Second

// stallDeadline is the deadline of a command sent to a stopped browser,
// which can only end at its deadline (outcome unknown).
const stallDeadline = 2 * time.Second

// answerCap is the answer size cap of the transports that have one in these
// tests: the cdp-inspect read limit and the result routes' body cap.
const answerCap = 1 << 20

// extensionDir is the reference extension, relative to this package.
const extensionDir = "../../examples/extension"

const pageTitle = "fault page"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// site serves /page (a titled page) and /hold?id=N, a request the server
// holds until the client goes away or the test ends; arrivals are reported
// per id so a test knows, without polling, that a command is in flight.
type site struct {
	srv     *httptest.Server
	mu      sync.Mutex
	arrived map[string]chan struct{}
	next    atomic.Int64
	release chan struct{}
}

func startSite(t *testing.T) *site {
	s := &site{arrived: make(map[string]chan struct{}), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%s</title><p>fault matrix</p>`, pageTitle)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ch := s.arrived[r.URL.Query().Get("id")]
		s.mu.Unlock()
		if ch != nil {
			close(ch)
		}
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
	})
	s.srv = chromiumtest.LoopbackServer(t, mux)
	t.Cleanup(func() { close(s.release) }) // runs before the server's Close
	return s
}

func (s *site) url(path string) string { return s.srv.URL + path }

// hold returns a fresh /hold path and the channel closed when it arrives.
func (s *site) hold() (string, <-chan struct{}) {
	id := strconv.FormatInt(s.next.Add(1), 10)
	ch := make(chan struct{})
	s.mu.Lock()
	s.arrived[id] = ch
	s.mu.Unlock()
	return "/hold?id=" + id, ch
}

// rig is one backend under test with its fault injectors. A nil injector
// means the fault does not apply to the backend.
type rig struct {
	kind bb.Kind
	sel  *bb.Selector
	inv  func(conv string) bb.Invocation
	// profile returns the user-data dir of the browser serving now.
	profile func() string
	// killBrowser SIGKILLs the browser process (not a driver or bridge);
	// restart brings a browser back for the next invocation (local
	// relaunches by itself).
	killBrowser, restart func(t *testing.T)
	// killDriver SIGKILLs the Playwright driver (local).
	killDriver func(t *testing.T)
	// vanish makes the hub client disappear; reappear brings one back.
	vanish, reappear func(t *testing.T)
	// capped reports whether answers above answerCap are refused.
	capped bool
}

func startLocal(t *testing.T) *rig {
	profile := t.TempDir()
	lb := local.New(local.Options{ProfileDir: profile, Logger: quietLogger()})
	t.Cleanup(func() {
		require.NoError(t, lb.Close())
		chromiumtest.AssertNoProcesses(t, profile, 10*time.Second)
	})
	browser := func(t *testing.T) chromiumtest.Proc {
		p, ok := chromiumtest.BrowserProcess(profile)
		require.True(t, ok, "the local browser runs")
		return p
	}
	return &rig{
		kind: bb.KindLocal,
		sel:  bb.NewSelector(bb.Options{Providers: []bb.Provider{local.NewProvider(lb)}, Logger: quietLogger()}),
		inv: func(conv string) bb.Invocation {
			return bb.Invocation{ConversationID: conv, InterfaceID: "cli", Mode: bb.Mode("local")}
		},
		profile:     func() string { return profile },
		killBrowser: func(t *testing.T) { require.NoError(t, unix.Kill(browser(t).PID, unix.SIGKILL)) },
		restart:     func(*testing.T) {},
		killDriver:  func(t *testing.T) { require.NoError(t, unix.Kill(browser(t).PPID, unix.SIGKILL)) },
	}
}

// current is the Chromium a rig serves from now; restart replaces it.
type current struct {
	p atomic.Pointer[chromiumtest.Browser]
}

func (c *current) start(t *testing.T, opts ...chromiumtest.Option) *chromiumtest.Browser {
	b := chromiumtest.Start(t, opts...)
	c.p.Store(b)
	return b
}

func (c *current) inspectConfig() cdpinspect.Config {
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port, cfg.Enabled = "127.0.0.1", c.p.Load().Port, true
	cfg.ProbeTimeoutMs = 5000 // a loaded machine must not turn an answer into a timeout
	return cfg
}

func (c *current) inspectOptions(extra ...cdpinspect.Option) []cdpinspect.Option {
	return append([]cdpinspect.Option{cdpinspect.WithWebSocketURL(c.p.Load().BrowserWSURL), cdpinspect.WithUserDataDirs()}, extra...)
}

func startCDPInspect(t *testing.T) *rig {
	cur := &current{}
	cur.start(t)
	// One provider per browser, so that a conversation keeps its tab across
	// invocations (the provider remembers it); a restarted browser (a new
	// port) gets a new provider at the next invocation.
	var mu sync.Mutex
	var provBrowser *chromiumtest.Browser
	var inspect *cdpinspect.Provider
	var made []*cdpinspect.Provider
	t.Cleanup(func() { // before the browsers are killed: their shared sockets close first
		mu.Lock()
		defer mu.Unlock()
		for _, p := range made {
			p.Close()
		}
	})
	prov := bb.ProviderFunc(cdpinspect.Descriptor(cdpinspect.DefaultConfig()), func(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
		mu.Lock()
		if b := cur.p.Load(); b != provBrowser {
			provBrowser = b
			inspect = cdpinspect.NewProvider(cur.inspectConfig(), cur.inspectOptions(cdpinspect.WithReadLimit(answerCap))...)
			made = append(made, inspect)
		}
		p := inspect
		mu.Unlock()
		return p.Propose(inv, env)
	})
	return &rig{
		kind: bb.KindCDPInspect,
		sel:  bb.NewSelector(bb.Options{Providers: []bb.Provider{prov}, Logger: quietLogger()}),
		inv: func(conv string) bb.Invocation {
			return bb.Invocation{ConversationID: conv, InterfaceID: "cli", Mode: bb.Mode("cdp-inspect")}
		},
		profile:     func() string { return cur.p.Load().UserDataDir },
		killBrowser: func(*testing.T) { cur.p.Load().Kill() },
		restart:     func(t *testing.T) { cur.start(t) },
		capped:      true,
	}
}

// hubRig is the reference runtime on a loopback port, its result routes
// capped at answerCap.
type hubRig struct {
	rt  *runtime.Runtime
	url string
}

func startHub(t *testing.T) *hubRig {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	// The host-bridge cooldown is off: after a fault the matrix checks that
	// the next invocation finds the recovered bridge (the cooldown itself,
	// which would send it to the next backend for 30 s, has its own tests).
	rt, err := runtime.New(runtime.Config{Key: key, AllowedOrigins: []string{extension.Origin},
		Logger: quietLogger(), MaxBodyBytes: answerCap, HostBridgeCooldown: -1})
	require.NoError(t, err)
	srv := chromiumtest.LoopbackServer(t, rt.Handler)
	t.Cleanup(func() { rt.Close() }) // before the server's Close: streams end first
	return &hubRig{rt: rt, url: srv.URL}
}

func (h *hubRig) inv(conv string) bb.Invocation {
	return bb.Invocation{ConversationID: conv, InterfaceID: "cli", ActorPrincipalID: h.rt.Auth.ActorPrincipalID()}
}

// waitClient waits, woken by roster changes (never polling), until a client
// of the interface other than not is connected, and returns it.
func (h *hubRig) waitClient(t *testing.T, iface, not string) eventhub.ClientInfo {
	t.Helper()
	guard := time.NewTimer(longDeadline)
	defer guard.Stop()
	for {
		changed := h.rt.Hub.Changed()
		for _, c := range h.rt.Hub.Roster() {
			if c.InterfaceID == iface && c.ClientID != not {
				return c
			}
		}
		select {
		case <-changed:
		case <-guard.C:
			t.Fatalf("no %s client connected within %v", iface, longDeadline)
		}
	}
}

// waitGone waits until clientID has left the roster.
func (h *hubRig) waitGone(t *testing.T, clientID string) {
	t.Helper()
	select {
	case <-h.rt.Hub.Gone(clientID):
	case <-time.After(longDeadline):
		t.Fatalf("client %s still connected after %v", clientID, longDeadline)
	}
}

func startHostBridge(t *testing.T) *rig {
	h := startHub(t)
	cur := &current{}
	cur.start(t)
	var n atomic.Int64
	var stop atomic.Pointer[func()]
	run := func(t *testing.T) {
		id := "mac-" + strconv.FormatInt(n.Add(1), 10)
		tok, err := h.rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS, ClientID: id})
		require.NoError(t, err)
		br, err := bridge.New(bridge.Options{
			ServerURL: h.url, Token: tok.Token, ClientID: id, InterfaceID: wire.InterfaceMacOS,
			Dial: func(ctx context.Context) (bridge.Browser, error) {
				return bridge.CDPInspectDialer(cur.inspectConfig(), cur.inspectOptions()...)(ctx)
			},
			Logger: quietLogger(), MinBackoff: 10 * time.Millisecond,
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- br.Run(ctx) }()
		var once sync.Once
		halt := func() {
			once.Do(func() {
				cancel()
				assert.ErrorIs(t, <-done, context.Canceled)
			})
		}
		stop.Store(&halt)
		t.Cleanup(halt)
		h.waitClient(t, wire.InterfaceMacOS, "")
	}
	run(t)
	return &rig{
		kind:        bb.KindHostBridge,
		sel:         h.rt.Selector,
		inv:         h.inv,
		profile:     func() string { return cur.p.Load().UserDataDir },
		killBrowser: func(*testing.T) { cur.p.Load().Kill() },
		restart:     func(t *testing.T) { cur.start(t) },
		vanish:      func(*testing.T) { (*stop.Load())() },
		reappear:    run,
		capped:      true,
	}
}

func startExtension(t *testing.T) *rig {
	h := startHub(t)
	cur := &current{}
	var clientID atomic.Value
	launch := func(t *testing.T) {
		dst := t.TempDir()
		require.NoError(t, extension.Install(extensionDir, dst, h.url))
		cur.start(t, chromiumtest.WithExtension(dst))
		clientID.Store(h.waitClient(t, wire.InterfaceChromeExtension, "").ClientID)
	}
	launch(t)
	return &rig{
		kind:    bb.KindExtension,
		sel:     h.rt.Selector,
		inv:     h.inv,
		profile: func() string { return cur.p.Load().UserDataDir },
		killBrowser: func(t *testing.T) {
			id := clientID.Load().(string)
			cur.p.Load().Kill()
			h.waitGone(t, id)
		},
		restart: launch,
		vanish: func(t *testing.T) {
			// The hub drops the client's stream, as when its connection
			// breaks; the extension reconnects by itself.
			id := clientID.Load().(string)
			require.True(t, h.rt.Hub.Unregister(id))
		},
		reappear: func(t *testing.T) {
			clientID.Store(h.waitClient(t, wire.InterfaceChromeExtension, "").ClientID)
		},
		capped: true,
	}
}

// backends are the four rigs, by name, in chain order.
var backends = []struct {
	name  string
	start func(*testing.T) *rig
}{
	{"extension", startExtension},
	{"host-bridge", startHostBridge},
	{"cdp-inspect", startCDPInspect},
	{"local", startLocal},
}

// eachBackend runs f on a fresh rig of each named backend.
func eachBackend(t *testing.T, names []string, f func(t *testing.T, r *rig, s *site)) {
	for _, b := range backends {
		if !slices.Contains(names, b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			s := startSite(t)
			f(t, b.start(t), s)
		})
	}
}

// The backends each fault applies to.
var (
	all       = []string{"extension", "host-bridge", "cdp-inspect", "local"}
	hubKinds  = []string{"extension", "host-bridge"}
	localOnly = []string{"local"}
)

func evalParams(expr string, await bool) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": await})
	return raw
}

// evaluate runs expr on c and returns result.value as JSON text.
func evaluate(ctx context.Context, c *bb.Client, expr string) (string, error) {
	raw, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: evalParams(expr, true)})
	if err != nil {
		return "", err
	}
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", err
	}
	if len(res.ExceptionDetails) > 0 {
		return "", fmt.Errorf("faulttest: exception: %s", res.ExceptionDetails)
	}
	return string(res.Result.Value), nil
}

// openPage returns a client of conv whose page shows /page.
func openPage(t *testing.T, ctx context.Context, r *rig, s *site, conv string) *bb.Client {
	t.Helper()
	c := r.sel.Client(r.inv(conv))
	t.Cleanup(func() { c.Close() })
	_, err := c.Send(ctx, bb.Command{Method: "Page.navigate", Params: json.RawMessage(`{"url":"` + s.url("/page") + `"}`)})
	require.NoError(t, err, "navigate")
	title, err := evaluate(ctx, c, `new Promise(r => document.readyState === "complete" ? r() : addEventListener("load", r)).then(() => document.title)`)
	require.NoError(t, err)
	require.Equal(t, strconv.Quote(pageTitle), title)
	return c
}

// inFlight starts, on a client of conv showing /page, an evaluate that
// waits for a held request, and returns once the request reached the server
// (the command is in flight in the browser); done receives its error.
func inFlight(t *testing.T, r *rig, s *site, conv string) (c *bb.Client, ctx context.Context, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
	t.Cleanup(cancel)
	c = openPage(t, ctx, r, s, conv)
	path, arrived := s.hold()
	out := make(chan error, 1)
	go func() {
		_, err := evaluate(ctx, c, `fetch("`+path+`").then(r => r.text())`)
		out <- err
	}()
	select {
	case <-arrived:
	case err := <-out:
		t.Fatalf("the held command ended before the fault: %v", err)
	case <-ctx.Done():
		t.Fatal("the held request never reached the server")
	}
	return c, ctx, out
}

// endedByFault asserts that err is a typed error that ended the command
// because of the fault: not a timeout, and before ctx's deadline.
func endedByFault(t *testing.T, ctx context.Context, err error) *bb.Error {
	t.Helper()
	require.Error(t, err, "the in-flight command must fail")
	var e *bb.Error
	require.ErrorAs(t, err, &e, "a typed error")
	assert.NotErrorIs(t, err, bb.ErrTimeout, "ended by the fault, not at the deadline")
	assert.NoError(t, ctx.Err(), "returned before its deadline")
	t.Logf("in-flight command: %v", err)
	return e
}

// recovers asserts that a new invocation of conv works end to end.
func recovers(t *testing.T, r *rig, s *site, conv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
	defer cancel()
	c := openPage(t, ctx, r, s, conv)
	got, err := evaluate(ctx, c, "6*7")
	require.NoError(t, err)
	assert.Equal(t, "42", got)
	assert.Equal(t, r.kind, c.Kind(), "served by the backend under test")
}
