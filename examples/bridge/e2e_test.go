//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

var waitClient = hostproxytest.WaitClient

// buildBridge builds this command into a test temp dir.
func buildBridge(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bridge")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// bridgeProc is the bridge running as a separate process, in its own process
// group, killed at the end of the test.
type bridgeProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    *bytes.Buffer
}

func startBridgeProc(t testing.TB, bin string, args ...string) *bridgeProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &bridgeProc{cmd: cmd, exited: make(chan struct{}), log: &log}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("bridge %v log:\n%s", args, log.String())
		}
	})
	return p
}

// kill SIGKILLs the process group and waits for the process to be reaped.
func (p *bridgeProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// fixture serves a page and /inflight/<name>: the first hit of each name
// closes the channel hook(name) returns and answers "block" (the page then
// waits forever); later hits answer "served-after-failover".
func fixture(t testing.TB) (*httptest.Server, func(name string) <-chan struct{}) {
	var mu sync.Mutex
	hooks := map[string]chan struct{}{}
	hook := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if hooks[name] == nil {
			hooks[name] = make(chan struct{})
		}
		return hooks[name]
	}
	hit := map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>bridge e2e</title><h1 id="h">hello from the fixture</h1>`)
	})
	mux.HandleFunc("/inflight/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		name := r.PathValue("name")
		ch := hook(name)
		mu.Lock()
		first := !hit[name]
		hit[name] = true
		mu.Unlock()
		if first {
			_, _ = io.WriteString(w, "block")
			close(ch)
			return
		}
		_, _ = io.WriteString(w, "served-after-failover")
	})
	srv := chromiumtest.LoopbackServer(t, mux)
	return srv, func(name string) <-chan struct{} { return hook(name) }
}

// blockingExpr fetches /inflight/<name> and, on its first hit, never
// settles; on later hits it returns "served-after-failover".
func blockingExpr(site, name string) string {
	return fmt.Sprintf(`fetch(%q).then(r => r.text()).then(t => t === "block" ? new Promise(() => {}) : t)`,
		site+"/inflight/"+name)
}

func evaluate(ctx context.Context, c *bb.Client, expr string, await bool) (string, error) {
	res, err := cdp.Call(ctx, c, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: new(true), AwaitPromise: new(await)})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("exception: %s", res.ExceptionDetails.Text)
	}
	return string(res.Result.Value), nil
}

func findAttempt(as []bb.Attempt, k bb.Kind) (bb.Attempt, bool) {
	for _, a := range as {
		if a.Kind == k {
			return a, true
		}
	}
	return bb.Attempt{}, false
}

func attemptKinds(as []bb.Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s@%s[%s]", a.Kind, a.Stage, a.Code))
	}
	return out
}

// TestEndToEnd_HostBridgeProcessOnRealChromium drives a real headless
// Chromium through the bridge running as a separate process, then kills the
// bridge mid-command.
func TestEndToEnd_HostBridgeProcessOnRealChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium and builds the bridge")
	}
	chrome := chromiumtest.Start(t)
	site, inflight := fixture(t)
	rs := hostproxytest.NewServer(t, hostproxytest.ServerOptions{
		Tokens: map[string]string{"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}})
	bridgeArgs := func(token, clientID string) []string {
		return []string{"-server", rs.URL, "-token", token, "-client-id", clientID,
			"-devtools", fmt.Sprintf("127.0.0.1:%d", chrome.Port), "-ws-url", chrome.BrowserWSURL,
			"-min-backoff", "20ms", "-max-backoff", "200ms",
			// 200 concurrent conversations below would each open a tab;
			// per-conversation tabs over the bridge have their own test
			// (browserbackend/tools TestHostBridgeThreeUserTabs_…).
			"-conversation-tabs=false"}
	}
	bin := buildBridge(t)
	// Runs after every bridge's own cleanup (LIFO): no bridge process survives.
	t.Cleanup(func() { chromiumtest.AssertNoProcesses(t, bin, 10*time.Second) })
	alice := startBridgeProc(t, bin, bridgeArgs("tok-alice", "mac-alice")...)
	startBridgeProc(t, bin, bridgeArgs("tok-bob", "mac-bob")...)
	carol := startBridgeProc(t, bin, bridgeArgs("tok-carol", "mac-carol")...)
	for _, id := range []string{"mac-alice", "mac-bob", "mac-carol"} {
		waitClient(t, rs.Hub, id, true)
	}

	cfg := cdpinspect.DefaultConfig() // desktopAuto on: a macos turn lists cdp-inspect
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", chrome.Port, 3000
	cooldowns := &bb.Cooldowns{}
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{
			rs.Proxy.ExtensionProvider(hostproxy.ProviderOptions{}),
			rs.Proxy.HostBridgeProvider(hostproxy.ProviderOptions{}),
			cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(quiet())),
		},
		Logger:         quiet(),
		Cooldowns:      cooldowns,
		CommandTimeout: 20 * time.Second, // a lost in-flight request must not need it
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// 1. An auto invocation on a macos turn picks host-bridge and does real work.
	c1 := sel.Client(bb.Invocation{ConversationID: "c1", InterfaceID: "macos", ActorPrincipalID: "alice"})
	_, err := cdp.Call(ctx, c1, page.Enable, page.EnableParams{})
	require.NoError(t, err, "attempts: %v", attemptKinds(c1.Attempts()))
	assert.Equal(t, bb.KindHostBridge, c1.Kind())
	loads := cdp.Events(ctx, c1, page.LoadEventFired)
	_, err = cdp.Call(ctx, c1, page.Navigate, page.NavigateParams{URL: site.URL + "/"})
	require.NoError(t, err)
	for ev, err := range loads {
		require.NoError(t, err)
		assert.NotNil(t, ev)
		break
	}
	text, err := evaluate(ctx, c1, "document.getElementById('h').textContent", false)
	require.NoError(t, err)
	assert.Equal(t, `"hello from the fixture"`, text)
	shot, err := cdp.Call(ctx, c1, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(shot.Data, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot (cdproto decodes the base64)")
	require.NoError(t, c1.Close())

	// 2. 200 concurrent invocations through the one bridge each get their own answer.
	const n = 200
	var wg sync.WaitGroup
	answers := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			c := sel.Client(bb.Invocation{ConversationID: fmt.Sprintf("par-%d", i), InterfaceID: "macos", ActorPrincipalID: "alice"})
			defer c.Close()
			answers[i], errs[i] = evaluate(ctx, c, fmt.Sprintf(`"answer-%d"`, i), false)
			if errs[i] == nil && c.Kind() != bb.KindHostBridge {
				errs[i] = fmt.Errorf("served by %s", c.Kind())
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "invocation %d", i)
		assert.Equal(t, fmt.Sprintf(`"answer-%d"`, i), answers[i], "invocation %d got another's answer", i)
	}

	type result struct {
		v   string
		err error
	}

	// 3. Mid-session: alice's invocation is sticky on host-bridge when her
	// bridge process is killed while a command is in flight. That command
	// fails at once with a transport error (not after the 20 s command
	// timeout), and the actor's host-bridge cooldown is recorded.
	c2 := sel.Client(bb.Invocation{ConversationID: "c2", InterfaceID: "macos", ActorPrincipalID: "alice"})
	defer c2.Close()
	_, err = evaluate(ctx, c2, "1", false)
	require.NoError(t, err)
	require.Equal(t, bb.KindHostBridge, c2.Kind())
	done := make(chan result, 1)
	go func() {
		v, err := evaluate(ctx, c2, blockingExpr(site.URL, "alice"), true)
		done <- result{v, err}
	}()
	<-inflight("alice") // the page is running the command the bridge sent
	alice.kill()
	r := <-done
	require.Error(t, r.err)
	assert.ErrorIs(t, r.err, bb.ErrTransport, "the lost client is a transport error")
	assert.NotErrorIs(t, r.err, bb.ErrTimeout, "it did not wait for the command timeout")
	assert.True(t, cooldowns.Active(hostproxy.HostBridgeCooldownKey("alice")), "host-bridge cooldown recorded for alice")
	assert.False(t, cooldowns.Active(hostproxy.HostBridgeCooldownKey("bob")))
	waitClient(t, rs.Hub, "mac-alice", false)

	// 4. Alice's next invocation skips host-bridge (cooldown) and is served by cdp-inspect.
	c3 := sel.Client(bb.Invocation{ConversationID: "c3", InterfaceID: "macos", ActorPrincipalID: "alice"})
	defer c3.Close()
	v, err := evaluate(ctx, c3, "6*7", false)
	require.NoError(t, err)
	assert.Equal(t, "42", v)
	assert.Equal(t, bb.KindCDPInspect, c3.Kind())
	hb, ok := findAttempt(c3.Attempts(), bb.KindHostBridge)
	require.True(t, ok, attemptKinds(c3.Attempts()))
	assert.Equal(t, bb.StageCandidateSelection, hb.Stage)
	assert.Equal(t, bb.CodeCooldown, hb.Code)

	// 5. Within one invocation: carol's bridge dies during her invocation's
	// first command; the walk fails over to cdp-inspect at once and records
	// carol's cooldown.
	c5 := sel.Client(bb.Invocation{ConversationID: "c5", InterfaceID: "macos", ActorPrincipalID: "carol"})
	defer c5.Close()
	done = make(chan result, 1)
	go func() {
		v, err := evaluate(ctx, c5, blockingExpr(site.URL, "carol"), true)
		done <- result{v, err}
	}()
	<-inflight("carol")
	carol.kill()
	r = <-done
	require.NoError(t, r.err, "attempts: %v", attemptKinds(c5.Attempts()))
	assert.Equal(t, `"served-after-failover"`, r.v)
	assert.Equal(t, bb.KindCDPInspect, c5.Kind())
	hb, ok = findAttempt(c5.Attempts(), bb.KindHostBridge)
	require.True(t, ok, attemptKinds(c5.Attempts()))
	assert.Equal(t, bb.StageSend, hb.Stage)
	assert.Equal(t, bb.ClassTransport, hb.Class, "a lost client is a transport error, not a timeout: %v", attemptKinds(c5.Attempts()))
	assert.True(t, cooldowns.Active(hostproxy.HostBridgeCooldownKey("carol")))

	// 6. Bob is unaffected: his own bridge still serves him.
	c4 := sel.Client(bb.Invocation{ConversationID: "c4", InterfaceID: "macos", ActorPrincipalID: "bob"})
	defer c4.Close()
	v, err = evaluate(ctx, c4, "'bob-' + (2+3)", false)
	require.NoError(t, err)
	assert.Equal(t, `"bob-5"`, v)
	assert.Equal(t, bb.KindHostBridge, c4.Kind())
	assert.False(t, cooldowns.Active(hostproxy.HostBridgeCooldownKey("bob")))
}
