package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/vellumtest"
	"github.com/browserchain/browserchain/local"
)

// ScaleOptions sizes the scale phase.
type ScaleOptions struct {
	// Clients simulated extension clients carry Conversations conversations
	// (conversation i on client i mod Clients), each sending Rounds
	// commands, all conversations at once.
	Clients, Conversations, Rounds int
	// LocalConversations conversations send LocalRounds commands each, at
	// once, on one local (Playwright) Chromium.
	LocalConversations, LocalRounds int
}

// ScaleResult is what the scale phase measured: one run per result
// transport, then local.
type ScaleResult struct {
	Clients, Conversations, Rounds int
	Runs                           []ScaleRun
	Local                          *ScaleLocal `json:",omitempty"`
	Took                           time.Duration
}

// Result transports of the simulated clients.
const (
	ScaleSocket = "result socket"
	ScalePOST   = "result POSTs"
)

// ScaleRun is the extension load with one result transport, on a server of
// its own.
type ScaleRun struct {
	// Transport is ScaleSocket (as the reference extension sends results)
	// or ScalePOST (as the Vellum extension does).
	Transport string
	// ConnectTook is the time from the first client's start to every client
	// listed in the hub roster.
	ConnectTook time.Duration

	// Idle is the cost of the connected, idle clients; Conv the further cost
	// of the conversations once each has sent one command (selector client,
	// its backend, the extra result connections the clients opened).
	Idle, Conv ScaleCost

	// Commands is how many commands the load sent, in Elapsed (the first
	// send to the last answer); D is each command's round trip.
	Commands int
	Elapsed  time.Duration
	D        Durations
	ScaleCheck
}

// ScaleCost is memory and goroutines per unit (client or conversation),
// split by which side of the wire holds it. Heap is heap-object bytes after
// a GC (runtime/metrics /memory/classes/heap/objects:bytes); the split
// comes from a heap profile taken at MemProfileRate 1 over the step, each
// allocation's stack deciding its side: the runtime (net/http's server
// conns, eventhub, hostproxy, auth, browserbackend) or the simulated
// client (vellumtest, net/http's Transport). Goroutines are counted by the
// pprof label of the goroutine that started them.
type ScaleCost struct {
	Units                                    int
	Heap, HeapRuntime, HeapClient, HeapOther float64
	// Stacks is goroutine stack bytes (/memory/classes/heap/stacks:bytes).
	Stacks                                          float64
	Goroutines, GoroutinesRuntime, GoroutinesClient float64
}

// ScaleCheck counts the answers that went wrong (each answer carries its
// conversation's token and the client that ran it).
type ScaleCheck struct {
	// Lost is commands that failed or timed out; CrossDelivered answers
	// that carried another conversation's token or came from another client
	// than the conversation's; Duplicated counts answers given twice: see
	// deliveries.duplicates. The tab set-up a conversation's first command
	// brings is published like any request and never counts.
	Lost, Duplicated, CrossDelivered int
	// FirstError is the first failure, for the report.
	FirstError string `json:",omitempty"`
}

// Failed reports whether any answer was lost, duplicated or cross-delivered.
func (c ScaleCheck) Failed() bool { return c.Lost+c.Duplicated+c.CrossDelivered > 0 }

// ScaleLocal is the same load on the local backend: conversations each on
// its own page of one Playwright Chromium.
type ScaleLocal struct {
	Conversations, Rounds, MaxPages int
	Commands                        int
	Elapsed                         time.Duration
	D                               Durations
	ScaleCheck
}

// side labels: the goroutines of the runtime and of the simulated clients.
const (
	sideLabel   = "bench-side"
	sideRuntime = "runtime"
	sideClient  = "client"
)

// tokenExpression is the Runtime.evaluate params for a JS string literal
// holding token: a browser (and the simulated client) answers its value.
func tokenExpression(token string) json.RawMessage {
	lit, _ := json.Marshal(token)
	p, _ := json.Marshal(map[string]any{"expression": string(lit), "returnByValue": true})
	return p
}

// evalValue returns result.value of a Runtime.evaluate answer as a string.
func evalValue(raw json.RawMessage) (string, bool) {
	var r struct {
		Result struct {
			Value *string `json:"value"`
		} `json:"result"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Result.Value == nil {
		return "", false
	}
	return *r.Result.Value, true
}

// simAnswer answers like the reference extension's chrome.debugger would
// for Runtime.evaluate of a string literal, with "@clientID" appended so the
// caller can check which client ran the command, and answers the tab set-up
// of a conversation's first command (Vellum.createTab, Vellum.attach, the
// backend's Target.getTargetInfo) as the extension does. Each
// Runtime.evaluate it runs adds one to evaluated.
func simAnswer(clientID string, evaluated *atomic.Int64) func(context.Context, string, json.RawMessage, string) (json.RawMessage, error) {
	var tabs atomic.Int64
	return func(_ context.Context, method string, params json.RawMessage, _ string) (json.RawMessage, error) {
		switch method {
		case "Vellum.createTab":
			return json.RawMessage(fmt.Sprintf(`{"tabId":%d}`, tabs.Add(1))), nil
		case "Vellum.attach":
			return json.RawMessage(`{}`), nil
		case "Target.getTargetInfo":
			return json.RawMessage(`{"targetInfo":{"targetId":"T","type":"page","url":"about:blank"}}`), nil
		}
		var p struct {
			Expression string `json:"expression"`
		}
		var lit string
		if method != "Runtime.evaluate" || json.Unmarshal(params, &p) != nil || json.Unmarshal([]byte(p.Expression), &lit) != nil {
			return nil, fmt.Errorf("'%s' wasn't found", method)
		}
		evaluated.Add(1)
		return json.Marshal(map[string]any{"result": map[string]string{"type": "string", "value": lit + "@" + clientID}})
	}
}

// MeasureScale runs the scale phase: o.Clients simulated extension clients
// (hostproxy/vellumtest with an Answer function: the real wire — the SSE
// stream, each request on its own goroutine, its own HTTP transport with
// Chrome's 6 connections per host), each the one extension of its own user,
// with a token the harness server's authority minted, against that server on
// loopback; o.Conversations conversations through one Selector with the
// extension provider, conversation i of user i mod o.Clients; every
// conversation sends o.Rounds Runtime.evaluate, all at once. This runs twice,
// each on a fresh server: results on the result socket, then POSTed. Then
// the local backend with o.LocalConversations pages.
func MeasureScale(ctx context.Context, o ScaleOptions) (ScaleResult, error) {
	t0 := time.Now()
	res := ScaleResult{Clients: o.Clients, Conversations: o.Conversations, Rounds: o.Rounds}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, tr := range []string{ScaleSocket, ScalePOST} {
		run, err := measureScaleRun(ctx, o, tr)
		res.Runs = append(res.Runs, run)
		if err != nil {
			return res, err
		}
	}
	if o.LocalConversations > 0 {
		Progress("scale: local, %d conversations × %d rounds", o.LocalConversations, o.LocalRounds)
		l, err := measureScaleLocal(ctx, o.LocalConversations, o.LocalRounds)
		if err != nil {
			return res, err
		}
		res.Local = &l
	}
	res.Took = time.Since(t0)
	return res, nil
}

func measureScaleRun(ctx context.Context, o ScaleOptions, transport string) (ScaleRun, error) {
	res := ScaleRun{Transport: transport}
	var srv *Server
	var err error
	pprof.Do(ctx, pprof.Labels(sideLabel, sideRuntime), func(context.Context) { srv, err = StartServer() })
	if err != nil {
		return res, err
	}
	defer srv.Close()
	var receipts sync.Map // request id → *atomic.Int32, results the proxy accepted
	count := func(id string) {
		v, _ := receipts.LoadOrStore(id, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}
	srv.onReceipt.Store(&count)

	// Idle clients.
	oldRate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	restored := false
	restore := func() {
		if !restored {
			runtime.MemProfileRate = oldRate
			restored = true
		}
	}
	defer restore()
	before := sample()
	clients := make([]*vellumtest.Client, o.Clients)
	var evaluated atomic.Int64 // Runtime.evaluate the clients ran
	transports := make([]*http.Transport, o.Clients)
	defer func() {
		for i, c := range clients {
			if c != nil {
				c.Close()
			}
			if transports[i] != nil {
				transports[i].CloseIdleConnections()
			}
		}
	}()
	Progress("scale: %s: connecting %d clients", transport, o.Clients)
	start := time.Now()
	for i := range clients {
		id := fmt.Sprintf("sim-ext-%03d", i)
		tok, err := srv.Auth.Mint(auth.Grant{Actor: scaleActor(i), InterfaceID: wire.InterfaceChromeExtension, ClientID: id})
		if err != nil {
			return res, err
		}
		var c *vellumtest.Client
		transports[i] = &http.Transport{MaxConnsPerHost: 6, MaxIdleConnsPerHost: 6}
		pprof.Do(ctx, pprof.Labels(sideLabel, sideClient), func(ctx context.Context) {
			c, err = vellumtest.Start(ctx, vellumtest.Options{ServerURL: srv.URL, ClientID: id, Token: tok.Token,
				Origin: "chrome-extension://" + ExtensionID, Answer: simAnswer(id, &evaluated), Logger: discard,
				ResultSocket: transport == ScaleSocket, HTTPClient: &http.Client{Transport: transports[i]}})
		})
		if err != nil {
			return res, fmt.Errorf("benchreport: scale: client %d: %w", i, err)
		}
		clients[i] = c
	}
	if err := waitRoster(ctx, srv, o.Clients); err != nil {
		return res, err
	}
	res.ConnectTook = time.Since(start)
	idle := sample()
	res.Idle = idle.minus(before, o.Clients)

	// Conversations, one command each.
	Progress("scale: %s: opening %d conversations", transport, o.Conversations)
	sel := bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{
		srv.Proxy.ExtensionProvider(hostproxyProviderOpts)}})
	convs := make([]*bb.Client, o.Conversations)
	defer func() {
		for _, c := range convs {
			if c != nil {
				c.Close()
			}
		}
	}()
	var chk checker
	var sent atomic.Int64
	runConvs := func(rounds int, rec func(d time.Duration)) {
		var wg sync.WaitGroup
		for n := range convs {
			target := clients[n%o.Clients].ClientID()
			if convs[n] == nil {
				convs[n] = sel.Client(bb.Invocation{ConversationID: fmt.Sprintf("scale-conv-%04d", n),
					InterfaceID: wire.InterfaceCLI, ActorPrincipalID: scaleActor(n % o.Clients)})
			}
			c := convs[n]
			wg.Go(func() {
				for range rounds {
					token := fmt.Sprintf("scale-conv-%04d/%d", n, sent.Add(1))
					t := time.Now()
					raw, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: tokenExpression(token)})
					d := time.Since(t)
					if chk.check(raw, err, token+"@"+target) && rec != nil {
						rec(d)
					}
				}
			})
		}
		wg.Wait()
	}
	pprof.Do(ctx, pprof.Labels(sideLabel, sideRuntime), func(context.Context) { runConvs(1, nil) })
	res.Conv = sample().minus(idle, o.Conversations)
	restore()

	// The load: every conversation sends Rounds commands, all at once.
	Progress("scale: %s: %d conversations × %d rounds", transport, o.Conversations, o.Rounds)
	var mu sync.Mutex
	res.D = make(Durations, 0, o.Conversations*o.Rounds)
	lt := time.Now()
	runConvs(o.Rounds, func(d time.Duration) { mu.Lock(); res.D = append(res.D, d); mu.Unlock() })
	res.Elapsed = time.Since(lt)
	res.Commands = o.Conversations * o.Rounds

	// Closing a client lets its requests in hand finish and waits for the
	// server's answers on its socket, so its counts are complete.
	var requests, refused, onSocket int
	for i, c := range clients {
		c.Close()
		transports[i].CloseIdleConnections()
		s := c.Stats()
		clients[i] = nil
		requests += s.Requests
		onSocket += s.SocketResults
		for _, n := range s.ResultsRefused {
			refused += n
		}
	}
	res.ScaleCheck = chk.result()
	total := int(sent.Load())
	d := deliveries{received: requests, published: srv.Published(), evaluated: int(evaluated.Load()),
		measured: total, refused: refused, accepted: map[string]int{}}
	receipts.Range(func(id, v any) bool {
		d.accepted[id.(string)] = int(v.(*atomic.Int32).Load())
		return true
	})
	res.Duplicated += d.duplicates()
	if transport == ScaleSocket && onSocket < total-res.Lost && res.FirstError == "" {
		// Not a wrong answer, but the run would not measure what it says.
		return res, fmt.Errorf("benchreport: scale: only %d of %d results came over the result socket", onSocket, total)
	}
	return res, nil
}

// deliveries is what one scale run counted on both sides of the wire.
type deliveries struct {
	// received: requests the clients received; published: requests the
	// proxy made (the measured commands and the tab set-up alike, each under
	// a fresh id, published once).
	received, published int
	// evaluated: the measured commands (Runtime.evaluate) the clients ran;
	// measured: the measured commands sent.
	evaluated, measured int
	// refused: results the server refused; accepted: request id → results
	// the server accepted for it.
	refused  int
	accepted map[string]int
}

// duplicates counts the answers given more than once: a request delivered
// twice (received beyond published), a measured command run twice even under
// two request ids (evaluated beyond measured; one event may show in both, so
// the larger counts), a refused result, and every result accepted beyond the
// first for one request id.
func (d deliveries) duplicates() int {
	n := max(d.received-d.published, d.evaluated-d.measured, 0) + d.refused
	for _, k := range d.accepted {
		n += max(k-1, 0)
	}
	return n
}

// scaleActor is the user of simulated client i: one extension per user, as
// a hosted runtime serving many users sees them.
func scaleActor(i int) string { return fmt.Sprintf("scale-user-%03d", i) }

// checker counts the answers that went wrong; safe for concurrent use.
type checker struct {
	mu sync.Mutex
	ScaleCheck
}

// check records one answer; it reports whether the answer was right.
func (c *checker) check(raw json.RawMessage, err error, want string) bool {
	got, ok := evalValue(raw)
	if err == nil && ok && got == want {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.Lost++
		if c.FirstError == "" {
			c.FirstError = err.Error()
		}
	default:
		c.CrossDelivered++
		if c.FirstError == "" {
			c.FirstError = fmt.Sprintf("wanted %q, answered %s", want, raw)
		}
	}
	return false
}

func (c *checker) result() ScaleCheck {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ScaleCheck
}

// measureScaleLocal runs n conversations of rounds commands each at once on
// one local Chromium (each conversation its own page, within the page cap).
// Each page is given its conversation's token first; every command then
// reads it back, so an answer from another conversation's page shows.
func measureScaleLocal(ctx context.Context, n, rounds int) (ScaleLocal, error) {
	res := ScaleLocal{Conversations: n, Rounds: rounds, MaxPages: local.DefaultMaxPages}
	if n > res.MaxPages {
		return res, fmt.Errorf("benchreport: scale: %d local conversations exceed the page cap %d", n, res.MaxPages)
	}
	b := local.New(local.Options{Logger: discard})
	defer b.Close()
	cs := make([]*local.Client, n)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range cs {
		cs[i] = b.Client(fmt.Sprintf("scale-local-%02d", i))
		if err := cs[i].Open(ctx); err != nil {
			return res, err
		}
		p, _ := json.Marshal(map[string]any{"expression": fmt.Sprintf("window.__conv = %q", fmt.Sprintf("scale-local-%02d", i)),
			"returnByValue": true})
		if _, err := cs[i].Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: p}); err != nil {
			return res, err
		}
	}
	var chk checker
	var mu sync.Mutex
	res.D = make(Durations, 0, n*rounds)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range cs {
		wg.Go(func() {
			for r := range rounds {
				want := fmt.Sprintf("scale-local-%02d/%d", i, r)
				p, _ := json.Marshal(map[string]any{"expression": fmt.Sprintf("window.__conv + '/%d'", r), "returnByValue": true})
				t := time.Now()
				raw, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: p})
				d := time.Since(t)
				if chk.check(raw, err, want) {
					mu.Lock()
					res.D = append(res.D, d)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(t0)
	res.Commands = n * rounds
	res.ScaleCheck = chk.result()
	return res, nil
}

// waitRoster waits, on roster changes, until n chrome-extension clients are
// listed.
func waitRoster(ctx context.Context, s *Server, n int) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := s.Hub.Changed()
		got := 0
		for _, c := range s.Hub.Roster() {
			if c.InterfaceID == wire.InterfaceChromeExtension {
				got++
			}
		}
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("benchreport: scale: %d of %d clients connected: %w", got, n, ctx.Err())
		}
	}
}

// memSample is the process's heap and goroutines at one point, after GCs.
type memSample struct {
	heap, stacks float64
	bySide       map[string]float64 // profiled in-use heap bytes per side
	goroutines   map[string]int     // per side label ("" for unlabelled)
}

func sample() memSample {
	// The heap profile lags up to two cycles behind.
	for range 3 {
		runtime.GC()
	}
	s := []metrics.Sample{{Name: metricHeap}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	m := memSample{heap: float64(s[0].Value.Uint64()), stacks: float64(s[1].Value.Uint64()),
		bySide: heapBySide(), goroutines: goroutinesBySide()}
	return m
}

// minus is the cost per unit of what m holds beyond base.
func (m memSample) minus(base memSample, units int) ScaleCost {
	u := float64(units)
	g := func(side string) float64 { return float64(m.goroutines[side]-base.goroutines[side]) / u }
	h := func(side string) float64 { return (m.bySide[side] - base.bySide[side]) / u }
	all := 0
	for _, n := range m.goroutines {
		all += n
	}
	for _, n := range base.goroutines {
		all -= n
	}
	return ScaleCost{Units: units, Heap: (m.heap - base.heap) / u, HeapRuntime: h(sideRuntime),
		HeapClient: h(sideClient), HeapOther: h(""), Stacks: (m.stacks - base.stacks) / u,
		Goroutines: float64(all) / u, GoroutinesRuntime: g(sideRuntime), GoroutinesClient: g(sideClient)}
}

// Frames that decide an allocation's side; a client frame wins (no runtime
// stack contains one).
var (
	clientFrames  = []string{"hostproxy/vellumtest.", "net/http.(*Transport).", "net/http.(*persistConn)."}
	runtimeFrames = []string{"net/http.(*conn).", "net/http.(*Server).", "browserchain/eventhub.",
		"browserchain/hostproxy.", "browserchain/hostproxy/auth.", "browserchain/browserbackend."}
)

// heapBySide sums the in-use bytes of the heap profile by side.
func heapBySide() map[string]float64 {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	out := map[string]float64{}
	for i := range recs {
		out[stackSide(recs[i].Stack())] += float64(recs[i].InUseBytes())
	}
	return out
}

func stackSide(pcs []uintptr) string {
	side := ""
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		for _, c := range clientFrames {
			if strings.Contains(f.Function, c) {
				return sideClient
			}
		}
		for _, r := range runtimeFrames {
			if side == "" && strings.Contains(f.Function, r) {
				side = sideRuntime
			}
		}
		if !more {
			return side
		}
	}
}

// goroutinesBySide counts goroutines by their sideLabel (pprof's debug=1
// goroutine profile: "N @ pcs…" then "# labels: {…}" per group).
func goroutinesBySide() map[string]int {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	out := map[string]int{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	count := 0
	flush := func(side string) {
		if count > 0 {
			out[side] += count
		}
		count = 0
	}
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " @ "); i > 0 && !strings.HasPrefix(line, "#") {
			flush("")
			count, _ = strconv.Atoi(line[:i])
			continue
		}
		if strings.HasPrefix(line, "# labels: ") {
			side := ""
			for _, s := range []string{sideRuntime, sideClient} {
				if strings.Contains(line, strconv.Quote(sideLabel)+":"+strconv.Quote(s)) {
					side = s
				}
			}
			flush(side)
		}
	}
	flush("")
	return out
}

// errScaleFailed fails the phase when an answer went wrong.
var errScaleFailed = errors.New("answers lost, duplicated or cross-delivered")

// Err returns errScaleFailed (with the counts) when any answer of r
// went wrong, else nil.
func (r ScaleResult) Err() error {
	bad := r.Check()
	if !bad.Failed() {
		return nil
	}
	return fmt.Errorf("%w: %d lost, %d duplicated, %d cross-delivered (first: %s)", errScaleFailed,
		bad.Lost, bad.Duplicated, bad.CrossDelivered, bad.FirstError)
}

// Check sums the answer checks of every run and local.
func (r ScaleResult) Check() ScaleCheck {
	var bad ScaleCheck
	add := func(c ScaleCheck) {
		bad.Lost += c.Lost
		bad.Duplicated += c.Duplicated
		bad.CrossDelivered += c.CrossDelivered
		if bad.FirstError == "" {
			bad.FirstError = c.FirstError
		}
	}
	for _, run := range r.Runs {
		add(run.ScaleCheck)
	}
	if r.Local != nil {
		add(r.Local.ScaleCheck)
	}
	return bad
}
