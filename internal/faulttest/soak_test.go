//go:build linux && soak

// The soak runs only with -tags soak (make soak): it takes minutes.

package faulttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// soakCallTimeout is each tool call's deadline in the soak; soakSlack is
// how much later than it a call may return (issue 10: deadline + 2 s).
const (
	soakCallTimeout = 15 * time.Second
	soakSlack       = 2 * time.Second
	// soakConversations is the number of conversations per backend.
	soakConversations = 2
	// soakStall is how long a stalled browser stays stopped.
	soakStall = time.Second
)

// soakForm is the scenario's page: typing into #q and clicking #go writes
// the typed text into #out, which Extract reads back. With ?ev= the click
// also raises a page event: an alert or a confirm (answered by the
// scenario), a popup (closed by it where the backend lists tabs), or a
// download.
const soakForm = `<!doctype html><title>soak form</title>
<label for=q>query</label><input id=q>
<button id=go onclick="go()">go</button>
<p id=out>none</p>
<a id=dl download="soak.txt" href="data:text/plain,soak" hidden>file</a>
<script>
function go() {
	document.getElementById('out').textContent = 'echo:' + document.getElementById('q').value;
	switch (new URLSearchParams(location.search).get('ev')) {
	case 'alert': alert('soak'); break;
	case 'confirm': confirm('soak?'); break;
	case 'popup': window.open(location.pathname + '?popup=1'); break;
	case 'download': document.getElementById('dl').click(); break;
	}
}
</script>`

// soakEvents are the page events a scenario's click may raise ("" none).
var soakEvents = []string{"", "", "alert", "confirm", "popup", "download"}

// soakTally counts what the soak saw; safe for concurrent use.
type soakTally struct {
	mu         sync.Mutex
	calls      int
	ok         int
	errs       map[string]int    // by backend, tool code and backend class
	firstErr   map[string]string // the first error text of each errs key
	faults     map[string]int    // by backend and fault
	events     map[string]int    // page events met, by backend and what
	recoveries int
	late       []string // calls that returned after deadline + slack
	untyped    []string // errors that are not a *tools.Error
	// resets counts extracts that succeeded but did not read what the
	// scenario typed (a page reset by a fault: reloaded after a crash, or
	// replaced with a blank one), by backend; samples keeps the first ones.
	resets  map[string]int
	samples []string
	broken  map[bb.Kind]bool
	// lastFault is each backend's last fault and when it was injected;
	// timeouts keeps the first timeouts with the fault before them.
	lastFault map[bb.Kind]string
	faultAt   map[bb.Kind]time.Time
	timeouts  []string
}

func newSoakTally() *soakTally {
	return &soakTally{errs: map[string]int{}, firstErr: map[string]string{}, resets: map[string]int{}, faults: map[string]int{}, events: map[string]int{}, broken: map[bb.Kind]bool{},
		lastFault: map[bb.Kind]string{}, faultAt: map[bb.Kind]time.Time{}}
}

// call records one tool call of kind's rig that took took.
func (s *soakTally) call(kind bb.Kind, op string, err error, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if took > soakCallTimeout+soakSlack {
		s.late = append(s.late, fmt.Sprintf("%s %s: %v after %v", kind, op, err, took))
	}
	if err == nil {
		s.ok++
		if s.broken[kind] {
			s.broken[kind] = false
			s.recoveries++
		}
		return
	}
	var te *tools.Error
	if !errors.As(err, &te) || te.Code == "" {
		s.untyped = append(s.untyped, fmt.Sprintf("%s %s: %v", kind, op, err))
		return
	}
	class := "-"
	var be *bb.Error
	if errors.As(err, &be) {
		class = string(be.Class)
	}
	key := fmt.Sprintf("%s %s/%s", kind, te.Code, class)
	s.errs[key]++
	if class == string(bb.ClassTimeout) && len(s.timeouts) < 12 {
		last := "no fault yet"
		if at, ok := s.faultAt[kind]; ok {
			last = fmt.Sprintf("last fault %s %v before the call returned", s.lastFault[kind], time.Since(at).Round(time.Millisecond))
		}
		s.timeouts = append(s.timeouts, fmt.Sprintf("%s %s after %v (%s): %.400s", kind, op, took.Round(time.Millisecond), last, err))
	}
	if _, ok := s.firstErr[key]; !ok {
		s.firstErr[key] = op + ": " + err.Error()
	}
}

func (s *soakTally) fault(kind bb.Kind, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[string(kind)+" "+name]++
	s.broken[kind] = true
	s.lastFault[kind], s.faultAt[kind] = name, time.Now()
}

// event counts a page event a scenario met and handled.
func (s *soakTally) event(kind bb.Kind, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[string(kind)+" "+what]++
}

func (s *soakTally) reset(kind bb.Kind, conv, url, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets[string(kind)]++
	if len(s.samples) < 8 {
		s.samples = append(s.samples, fmt.Sprintf("%s %s: url=%q text=%.80q", kind, conv, url, text))
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	total := 0
	for k := range m {
		keys = append(keys, k)
		total += m[k]
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, " %d", total)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n    %-48s %d", k, m[k])
	}
	return b.String()
}

// soakProcs remembers every browser and driver process the soak saw, and
// every user-data dir, so that the end can check none is left.
type soakProcs struct {
	procs    map[int]chromiumtest.Proc
	profiles map[string]bool
}

func (p *soakProcs) record(rigs []*rig) {
	all := chromiumtest.Processes("")
	for _, r := range rigs {
		dir := r.profile()
		p.profiles[dir] = true
		b, ok := chromiumtest.BrowserProcess(dir)
		if !ok {
			continue
		}
		p.procs[b.PID] = b
		if r.killDriver == nil {
			continue
		}
		for _, d := range all {
			if d.PID == b.PPID && strings.Contains(d.Cmdline, "run-driver") {
				p.procs[d.PID] = d // the Playwright driver
			}
		}
	}
}

// tempEntries lists the names in the temporary directory.
func tempEntries(t *testing.T) []string {
	ents, err := os.ReadDir(os.TempDir())
	require.NoError(t, err)
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestSoak runs tool scenarios (navigate → snapshot → type → click →
// extract, the click raising a dialog, a popup or a download in most
// scenarios) on all four backends for $SOAK (default 10 minutes) while
// injecting random faults from the matrix: browser killed, renderer
// crashed, driver killed (local), client vanished (hub backends), browser
// stalled with SIGSTOP and resumed. Every call must return a result or a
// typed error within its deadline + 2 s, a successful extract must read the
// conversation's own page, every backend must serve a clean scenario once
// the faults stop, and afterwards no goroutine (goleak in TestMain), browser,
// driver, user-data dir or new temporary entry may be left.
//
// Make runs it with TMPDIR set to a fresh directory, so that the temporary
// entries compared are the soak's own.
func TestSoak(t *testing.T) {
	d := 10 * time.Minute
	if v := os.Getenv("SOAK"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(t, err, "SOAK must be a duration such as 60s")
	}
	before := tempEntries(t)
	seen := &soakProcs{procs: map[int]chromiumtest.Proc{}, profiles: map[string]bool{}}
	t.Run("run", func(t *testing.T) { runSoak(t, d, seen) })

	// Every cleanup of the run (rigs, browsers, temp dirs) has finished.
	for dir := range seen.profiles {
		chromiumtest.AssertNoProcesses(t, dir, 10*time.Second)
		_, err := os.Stat(dir)
		assert.True(t, errors.Is(err, os.ErrNotExist), "user-data dir %s removed", dir)
	}
	live := chromiumtest.Processes("")
	for _, p := range seen.procs {
		for _, q := range live {
			if q.PID == p.PID && q.Cmdline == p.Cmdline {
				t.Errorf("process %d left running: %.200s", p.PID, p.Cmdline)
			}
		}
	}
	// A process killed with SIGKILL cannot remove its scratch directory
	// (Chromium's org.chromium.Chromium.*, the driver's
	// playwright-artifacts-*): those are counted; any other new entry, and
	// any profile (a directory with a Local State file), fails.
	var added []string
	scratch := 0
	for _, n := range tempEntries(t) {
		if slices.Contains(before, n) {
			continue
		}
		_, err := os.Stat(filepath.Join(os.TempDir(), n, "Local State"))
		isProfile := err == nil
		if !isProfile && (strings.HasPrefix(n, "org.chromium.Chromium.") || strings.HasPrefix(n, "playwright-artifacts-")) {
			scratch++
			continue
		}
		added = append(added, n)
	}
	t.Logf("scratch dirs of killed processes left in the temporary directory: %d", scratch)
	assert.Empty(t, added, "temporary entries (profiles, files) left in %s", os.TempDir())
}

func runSoak(t *testing.T, d time.Duration, seen *soakProcs) {
	form := chromiumtest.FixtureServer(t, map[string]string{"/form": soakForm}).URL + "/form"
	rigs := []*rig{startExtension(t), startHostBridge(t), startCDPInspect(t), startLocal(t)}
	seen.record(rigs)
	tally := newSoakTally()
	timeoutMs := int(soakCallTimeout.Milliseconds())

	// scenario runs one navigate → snapshot → type → click → extract on
	// conv and reports whether every call succeeded.
	scenario := func(r *rig, tl *tools.Tools, mode, conv string, n int) bool {
		inv := r.inv(conv)
		ok := true
		timed := func(op string, f func(ctx context.Context) error) bool {
			t0 := time.Now()
			err := f(context.Background())
			tally.call(r.kind, op, err, time.Since(t0))
			ok = ok && err == nil
			return err == nil
		}
		word := fmt.Sprintf("%s-%d", conv, n)
		ev := ""
		if n >= 0 {
			ev = soakEvents[(n+len(conv))%len(soakEvents)]
		}
		page := form
		if ev != "" {
			page += "?ev=" + ev
		}
		if !timed("navigate", func(ctx context.Context) error {
			_, err := tl.Navigate(ctx, inv, tools.NavigateInput{BrowserMode: mode, URL: page, TimeoutMs: timeoutMs})
			return err
		}) {
			return false
		}
		timed("snapshot", func(ctx context.Context) error {
			_, err := tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{BrowserMode: mode, TimeoutMs: timeoutMs})
			return err
		})
		timed("type", func(ctx context.Context) error {
			_, err := tl.Act().Type(ctx, inv, tools.TypeInput{BrowserMode: mode, TimeoutMs: timeoutMs,
				Target: tools.Target{Selector: "#q"}, Text: word, Clear: true})
			return err
		})
		var clicked tools.ActionResult
		timed("click", func(ctx context.Context) error {
			var err error
			clicked, err = tl.Act().Click(ctx, inv, tools.ElementInput{BrowserMode: mode, TimeoutMs: timeoutMs,
				Target: tools.Target{Selector: "#go"}})
			var te *tools.Error
			if err == nil && clicked.Dialog != nil || errors.As(err, &te) && te.Code == tools.CodeDialogOpen {
				tally.event(r.kind, "dialog answered")
				_, err = tl.Act().HandleDialog(ctx, inv, tools.HandleDialogInput{BrowserMode: mode, TimeoutMs: timeoutMs, Accept: true})
			}
			return err
		})
		if len(clicked.Opened) > 0 || len(clicked.Downloads) > 0 {
			tally.event(r.kind, fmt.Sprintf("popups %d, downloads %d", len(clicked.Opened), len(clicked.Downloads)))
		}
		if len(clicked.Opened) > 0 && r.kind != bb.KindHostBridge {
			timed("tabs", func(ctx context.Context) error {
				tabs, err := tl.Tabs().List(ctx, inv, tools.TabsInput{BrowserMode: mode, TimeoutMs: timeoutMs})
				for _, tab := range tabs.Tabs {
					if err == nil && !tab.Current {
						_, err = tl.Tabs().Close(ctx, inv, tools.CloseTabInput{BrowserMode: mode, TimeoutMs: timeoutMs, TabID: tab.ID})
					}
				}
				return err
			})
		}
		echoed := false
		timed("extract", func(ctx context.Context) error {
			res, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{BrowserMode: mode, TimeoutMs: timeoutMs})
			echoed = err == nil && res.URL == page && strings.Contains(res.Text, "echo:"+word)
			if err == nil && !echoed {
				tally.reset(r.kind, conv, res.URL, res.Text)
			}
			return err
		})
		return ok && echoed
	}

	type worker struct {
		r    *rig
		tl   *tools.Tools
		mode string
		conv string
	}
	var workers []worker
	for _, r := range rigs {
		mode := ""
		if r.kind == bb.KindLocal || r.kind == bb.KindCDPInspect {
			mode = string(r.kind)
		}
		tl := tools.New(tools.Options{Selector: r.sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
		// cdp-inspect and the bridge drive the browser's one tab, shared by
		// every conversation; local and the extension give each its own.
		n := soakConversations
		if r.kind == bb.KindCDPInspect || r.kind == bb.KindHostBridge {
			n = 1
		}
		for i := range n {
			workers = append(workers, worker{r, tl, mode, fmt.Sprintf("soak-%s-%d", r.kind, i)})
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				scenario(w.r, w.tl, w.mode, w.conv, n)
			}
		})
	}

	// Faults run on the test goroutine (the injectors may fail the test),
	// one at a time, every 2–5 s: the workload's schedule, not a
	// synchronisation. The seed is logged so a failing run can be replayed
	// with SOAK_SEED.
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SOAK_SEED"); v != "" {
		_, err := fmt.Sscan(v, &seed)
		require.NoError(t, err, "SOAK_SEED must be a number")
	}
	t.Logf("soak: %v, seed %d", d, seed)
	rng := rand.New(rand.NewPCG(seed, 10))
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		pause.Reset(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-pause.C:
		}
		if ctx.Err() != nil {
			break
		}
		r := rigs[rng.IntN(len(rigs))]
		inject(t, r, rng.IntN(5), tally)
		seen.record(rigs)
	}
	wg.Wait()
	seen.record(rigs)

	// The faults have stopped: every conversation's next scenario works and
	// reads back what it typed.
	for _, w := range workers {
		assert.True(t, scenario(w.r, w.tl, w.mode, w.conv, -1), "%s recovers once the faults stop", w.conv)
	}

	tally.mu.Lock()
	defer tally.mu.Unlock()
	t.Logf("soak %v: %d calls, %d ok, %d recoveries\n  faults injected:%s\n  page events met:%s\n  errors by backend, code/class:%s\n  extracts of a page reset by a fault:%s",
		d, tally.calls, tally.ok, tally.recoveries, counts(tally.faults), counts(tally.events), counts(tally.errs), counts(tally.resets))
	for _, k := range slices.Sorted(maps.Keys(tally.firstErr)) {
		t.Logf("  first %s: %.300s", k, tally.firstErr[k])
	}
	for _, x := range tally.samples {
		t.Logf("  reset page read: %s", x)
	}
	for _, x := range tally.timeouts {
		t.Logf("  timeout: %s", x)
	}
	assert.Empty(t, tally.late, "calls that returned after their deadline + %v", soakSlack)
	assert.Empty(t, tally.untyped, "errors that are not typed")
	for k, b := range tally.broken {
		assert.False(t, b, "%s served no call after its last fault", k)
	}
}

// inject applies fault f (0–4) to r where it applies; a fault that does not
// apply to the backend, or finds nothing to hit, is skipped uncounted.
func inject(t *testing.T, r *rig, f int, tally *soakTally) {
	browser, running := chromiumtest.BrowserProcess(r.profile())
	switch {
	case f == 0 && running:
		tally.fault(r.kind, "browser killed")
		r.killBrowser(t)
		r.restart(t)
	case f == 1 && running:
		if chromiumtest.Signal(chromiumtest.PageRenderers(r.profile()), unix.SIGKILL) > 0 {
			tally.fault(r.kind, "renderer crashed")
		}
	case f == 2 && running && r.killDriver != nil:
		tally.fault(r.kind, "driver killed")
		r.killDriver(t)
	case f == 3 && r.vanish != nil:
		tally.fault(r.kind, "client vanished")
		r.vanish(t)
		r.reappear(t)
	case f == 4 && running:
		tally.fault(r.kind, "browser stalled")
		group := chromiumtest.Group(browser.PGID)
		chromiumtest.Signal(group, unix.SIGSTOP)
		stall := time.NewTimer(soakStall)
		<-stall.C
		chromiumtest.Signal(group, unix.SIGCONT)
	}
}
