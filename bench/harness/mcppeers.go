package harness

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer MCP server versions: the newest releases whose engines.node accepts
// Node 20 (scripts/setup.sh installs exactly these).
const (
	ChromeDevToolsMCPVersion = "1.11.0"
	PlaywrightMCPVersion     = "0.0.83"
)

// MCP server names, in report order.
const (
	MCPBrowserchain   = "browserchain (examples/mcp, cdp-inspect)"
	MCPChromeDevTools = "Chrome DevTools MCP " + ChromeDevToolsMCPVersion
	MCPPlaywright     = "Playwright MCP " + PlaywrightMCPVersion
	// MCPBrowserchainInteractive is browserchain's server with every
	// snapshot asking for the interactive nodes only (interactive: true).
	MCPBrowserchainInteractive = "browserchain, interactive snapshots"
)

// MCP scenario steps, in report order.
const (
	StepNavigate   = "navigate (form page)"
	StepSnapshot   = "snapshot (form page)"
	StepType       = "type into the field"
	StepClick      = "click the button"
	StepExtract    = "extract the result text"
	StepScreenshot = "screenshot (viewport)"
	StepShotIdle   = "screenshot (viewport, page idle 300 ms)"
	StepArticle    = "snapshot (3,000-word article)"
	StepBig        = "snapshot (5,000-element page)"
)

// MCPSteps lists the timed steps in report order.
var MCPSteps = []string{StepNavigate, StepSnapshot, StepType, StepClick, StepExtract, StepScreenshot, StepShotIdle, StepArticle, StepBig}

// shotIdle is how long the page is left alone, untimed, before the second
// screenshot: Chromium answers a capture asked for right after a change of
// the page once it has produced a new frame, and one on an idle page from
// the frame it has.
const shotIdle = 300 * time.Millisecond

// MCPStep is one step's figures on one server.
type MCPStep struct {
	Step string
	D    Durations
	// Bytes returned to the model per call: the text of every text content
	// plus the base64 of every image (structured content not counted).
	Bytes Floats
	// Structured is the JSON size of structuredContent per call (0 when the
	// server sends none).
	Structured Floats
	// Failed counts the kept rounds in which the step failed or could not
	// run because an earlier step failed; Err is the first failure.
	Failed int
	Err    string
}

// MCPResult is one MCP server's row group.
type MCPResult struct {
	Server string
	// Unavailable, when set, is why the server could not be measured here.
	Unavailable string
	Tools       int
	Steps       []MCPStep
	// RSS is the server's resident set (bytes, the process and its
	// children, /proc VmRSS) after the rounds.
	RSS float64
	// Cold is spawn → initialize answered.
	Cold Durations
	// Stopped, when set, is why the rounds stopped early for this server
	// (the figures measured until then stay).
	Stopped string
}

// Step returns the figures of step (nil when absent).
func (r *MCPResult) Step(step string) *MCPStep {
	for i := range r.Steps {
		if r.Steps[i].Step == step {
			return &r.Steps[i]
		}
	}
	return nil
}

// mcpCall is one tool call: a tool name and its arguments.
type mcpCall struct {
	tool string
	args map[string]any
}

// mcpPeer maps the scenario onto one server's tools and ref format.
type mcpPeer struct {
	name string
	// command returns the server's command line for a Chromium with its
	// DevTools endpoint on port; "" and a reason when it cannot run here.
	command    func(port int) (argv []string, unavailable string)
	navigate   func(url string) mcpCall
	snapshot   mcpCall
	typeText   func(ref, text string) mcpCall
	click      func(ref string) mcpCall
	extract    mcpCall
	screenshot mcpCall
	// refRE captures the element ref in a snapshot line.
	refRE *regexp.Regexp
	// ownPage opens a page of the server's own once it has started
	// (untimed) and returns what brings that page to the front and makes it
	// the server's current page, which runs (untimed) before each of its
	// rounds: the servers share one browser (port: its debugging port), and
	// a page left in the background gets no frames, so a screenshot waits
	// for one until its deadline and input is slow to be handled.
	ownPage func(ctx context.Context, s *mcpServer, port int) (func(context.Context) error, error)
}

var (
	bracketRef = regexp.MustCompile(`\[ref=([^\]\s]+)\]`)
	uidRef     = regexp.MustCompile(`uid=(\S+)`)
	// devtoolsSelected finds the selected page's id in Chrome DevTools
	// MCP's page list ("3: about:blank [selected]").
	devtoolsSelected = regexp.MustCompile(`(?m)^(\d+): .*\[selected\]`)
	// playwrightCurrent finds the current tab's index in Playwright MCP's
	// tab list ("- 2: (current) [](about:blank)").
	playwrightCurrent = regexp.MustCompile(`(?m)^- (\d+): \(current\)`)
)

// callFront returns a front func that runs c on s.
func callFront(s *mcpServer, c mcpCall) func(context.Context) error {
	return func(ctx context.Context) error {
		_, _, _, _, err := s.call(ctx, c)
		return err
	}
}

// devtoolsOwnPage opens a foreground page with new_page (which selects it);
// its front is select_page with bringToFront for that page.
func devtoolsOwnPage(ctx context.Context, s *mcpServer, _ int) (func(context.Context) error, error) {
	text, _, _, _, err := s.call(ctx, mcpCall{"new_page", map[string]any{"url": "about:blank"}})
	if err != nil {
		return nil, err
	}
	m := devtoolsSelected.FindStringSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("new_page: no selected page in its answer (%.200q)", text)
	}
	id, _ := strconv.Atoi(m[1])
	return callFront(s, mcpCall{"select_page", map[string]any{"pageId": id, "bringToFront": true}}), nil
}

// playwrightOwnPage opens a tab with browser_tabs new (which makes it
// current); its front is browser_tabs select (bringToFront) of that index.
func playwrightOwnPage(ctx context.Context, s *mcpServer, _ int) (func(context.Context) error, error) {
	text, _, _, _, err := s.call(ctx, mcpCall{"browser_tabs", map[string]any{"action": "new"}})
	if err != nil {
		return nil, err
	}
	m := playwrightCurrent.FindStringSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("browser_tabs new: no current tab in its answer (%.200q)", text)
	}
	idx, _ := strconv.Atoi(m[1])
	return callFront(s, mcpCall{"browser_tabs", map[string]any{"action": "select", "index": idx}}), nil
}

// browserchainOwnPage makes cdp-inspect open the conversation's tab (its
// first call does) on mark, a URL only it has, finds that tab in the browser's
// /json/list, and brings it to the front with /json/activate: browserchain
// has no tool that raises a tab, since in the user's own Chrome that would
// take the window from the user.
func browserchainOwnPage(ctx context.Context, s *mcpServer, port int, mark string) (func(context.Context) error, error) {
	if _, _, _, _, err := s.call(ctx, mcpCall{"browser_navigate", map[string]any{"url": mark}}); err != nil {
		return nil, err
	}
	return raiser(ctx, port, mark)
}

// raiser finds the page at mark in the browser's /json/list (DevTools HTTP
// port port) and returns a function that brings it to the front with
// /json/activate.
func raiser(ctx context.Context, port int, mark string) (func(context.Context) error, error) {
	var id string
	err := devtoolsJSON(ctx, port, "/json/list", func(body []byte) error {
		var targets []struct{ ID, Type, URL string }
		if err := json.Unmarshal(body, &targets); err != nil {
			return err
		}
		for _, t := range targets {
			if t.Type == "page" && t.URL == mark {
				id = t.ID
			}
		}
		if id == "" {
			return fmt.Errorf("no page at %s in /json/list", mark)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return devtoolsJSON(ctx, port, "/json/activate/"+id, nil)
	}, nil
}

// devtoolsJSON GETs path from the browser's DevTools HTTP endpoint and
// hands the body to read (nil: the status is enough).
func devtoolsJSON(ctx context.Context, port int, path string, read func([]byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %.200s", path, resp.Status, body)
	}
	if read != nil {
		return read(body)
	}
	return nil
}

const extractJS = "() => document.getElementById('out').textContent"

// peerBin is the installed binary of an npm peer (see scripts/setup.sh).
func peerBin(pkg, version, bin string) (string, string) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "no home directory for the npm cache"
	}
	dir := strings.NewReplacer("@", "_", "/", "_").Replace(pkg) + "-" + version
	p := filepath.Join(home, ".cache", "browserchain", "mcp-peers", dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Sprintf("%s %s is not installed (run scripts/setup.sh)", pkg, version)
	}
	return p, ""
}

func mcpPeers(mcpBin, shotDir string) []mcpPeer {
	browserchain := func(name string, snapshot map[string]any, mark string) mcpPeer {
		return mcpPeer{
			name: name,
			command: func(port int) ([]string, string) {
				return []string{mcpBin, "-cdp-inspect", "-cdp-port", strconv.Itoa(port), "-local=false",
					"-mode", "cdp-inspect", "-listen", "", "-screenshot-dir", shotDir}, ""
			},
			navigate:   func(u string) mcpCall { return mcpCall{"browser_navigate", map[string]any{"url": u}} },
			snapshot:   mcpCall{"browser_snapshot", snapshot},
			typeText:   func(ref, t string) mcpCall { return mcpCall{"browser_type", map[string]any{"ref": ref, "text": t}} },
			click:      func(ref string) mcpCall { return mcpCall{"browser_click", map[string]any{"ref": ref}} },
			extract:    mcpCall{"browser_extract", map[string]any{"selector": "#out"}},
			screenshot: mcpCall{"browser_screenshot", map[string]any{}},
			refRE:      bracketRef,
			ownPage: func(ctx context.Context, s *mcpServer, port int) (func(context.Context) error, error) {
				return browserchainOwnPage(ctx, s, port, mark)
			},
		}
	}
	return []mcpPeer{
		browserchain(MCPBrowserchain, map[string]any{}, "data:text/html,browserchain-bench"),
		browserchain(MCPBrowserchainInteractive, map[string]any{"interactive": true}, "data:text/html,browserchain-bench-interactive"),
		{
			name: MCPChromeDevTools,
			command: func(port int) ([]string, string) {
				bin, why := peerBin("chrome-devtools-mcp", ChromeDevToolsMCPVersion, "chrome-devtools-mcp")
				if why != "" {
					return nil, why
				}
				return []string{bin, "--browserUrl", fmt.Sprintf("http://127.0.0.1:%d", port),
					"--no-usage-statistics", "--no-performance-crux", "--no-page-id-routing"}, ""
			},
			navigate:   func(u string) mcpCall { return mcpCall{"navigate_page", map[string]any{"type": "url", "url": u}} },
			snapshot:   mcpCall{"take_snapshot", map[string]any{}},
			typeText:   func(ref, t string) mcpCall { return mcpCall{"fill", map[string]any{"uid": ref, "value": t}} },
			click:      func(ref string) mcpCall { return mcpCall{"click", map[string]any{"uid": ref}} },
			extract:    mcpCall{"evaluate_script", map[string]any{"function": extractJS}},
			screenshot: mcpCall{"take_screenshot", map[string]any{}},
			refRE:      uidRef,
			ownPage:    devtoolsOwnPage,
		},
		{
			name: MCPPlaywright,
			command: func(port int) ([]string, string) {
				bin, why := peerBin("@playwright/mcp", PlaywrightMCPVersion, "playwright-mcp")
				if why != "" {
					return nil, why
				}
				return []string{bin, "--cdp-endpoint", fmt.Sprintf("http://127.0.0.1:%d", port)}, ""
			},
			navigate: func(u string) mcpCall { return mcpCall{"browser_navigate", map[string]any{"url": u}} },
			snapshot: mcpCall{"browser_snapshot", map[string]any{}},
			typeText: func(ref, t string) mcpCall {
				return mcpCall{"browser_type", map[string]any{"element": "Display name text field", "target": ref, "text": t}}
			},
			click: func(ref string) mcpCall {
				return mcpCall{"browser_click", map[string]any{"element": "Apply button", "target": ref}}
			},
			extract:    mcpCall{"browser_evaluate", map[string]any{"function": extractJS}},
			screenshot: mcpCall{"browser_take_screenshot", map[string]any{"type": "png", "scale": "css"}},
			refRE:      bracketRef,
			ownPage:    playwrightOwnPage,
		},
	}
}

// findRef returns the ref on the first snapshot line that names role and
// the quoted accessible name.
func findRef(re *regexp.Regexp, snapshot, role, name string) (string, error) {
	for line := range strings.Lines(snapshot) {
		if strings.Contains(line, role) && strings.Contains(line, `"`+name+`"`) {
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1], nil
			}
		}
	}
	return "", fmt.Errorf("no %s %q with a ref in the snapshot (%d bytes)", role, name, len(snapshot))
}

// tailBuffer keeps the last 4 KiB written to it (a server's stderr).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i > 20 {
		s = s[i+1:]
	}
	return s
}

// mcpServer is one running server process with its client session.
type mcpServer struct {
	peer    *mcpPeer
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stderr  *tailBuffer
	// front brings the peer's own page to the front before each round.
	front func(context.Context) error
}

// startMCP spawns argv and runs the MCP initialize handshake; it returns the
// time from spawn to the initialize answer.
func startMCP(ctx context.Context, p *mcpPeer, argv []string, dir string) (*mcpServer, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	// The working directory is the run's temp dir: Playwright MCP writes its
	// output folder (.playwright-mcp) there.
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "CI=1", "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1")
	s := &mcpServer{peer: p, cmd: cmd, stderr: &tailBuffer{}}
	cmd.Stderr = s.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "benchreport", Version: "dev"}, nil)
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	t0 := time.Now()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	d := time.Since(t0)
	if err != nil {
		s.close()
		return nil, 0, fmt.Errorf("initialize: %w (stderr: %s)", err, s.stderr)
	}
	s.session = sess
	return s, d, nil
}

// close ends the session (stdin closed, then SIGTERM) and kills the
// process group.
func (s *mcpServer) close() {
	if s.session != nil {
		_ = s.session.Close()
	}
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		if s.session == nil {
			_ = s.cmd.Wait()
		}
	}
}

// call runs one tool call and returns its text, the bytes it returned to
// the model and the size of its structured content.
func (s *mcpServer) call(ctx context.Context, c mcpCall) (text string, n, structured int, d time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
	d = time.Since(t0)
	if err != nil {
		return "", 0, 0, d, fmt.Errorf("%s: %w", c.tool, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			b.WriteString(v.Text)
			b.WriteByte('\n')
			n += len(v.Text)
		case *mcp.ImageContent:
			n += base64.StdEncoding.EncodedLen(len(v.Data))
		case *mcp.ResourceLink:
			n += len(v.URI) + len(v.Name)
		case *mcp.EmbeddedResource:
			if v.Resource != nil {
				n += len(v.Resource.Text) + base64.StdEncoding.EncodedLen(len(v.Resource.Blob))
			}
		}
	}
	if res.StructuredContent != nil {
		if raw, err := jsonLen(res.StructuredContent); err == nil {
			structured = raw
		}
	}
	if res.IsError {
		return b.String(), n, structured, d, fmt.Errorf("%s: tool error: %.300s", c.tool, b.String())
	}
	return b.String(), n, structured, d, nil
}

// mcpCallTimeout bounds one tool call of the MCP comparison: a step that
// takes longer counts as failed (the slowest healthy step, the 5,000-element
// snapshot, takes about a second).
const mcpCallTimeout = 20 * time.Second

// MCPOptions are the sample counts of the MCP comparison.
type MCPOptions struct {
	Rounds, Warmup, Cold int
	// Root is the repository root (examples/mcp is built from it).
	Root string
}

// MeasureMCP runs the scenario through browserchain's MCP server and the two
// peers, all attached to one headless Chromium the harness starts, in
// interleaved rounds (each round runs the whole scenario once per server, in
// an order shuffled per round). A server that cannot start or fails a step
// gets Unavailable and the others go on.
func MeasureMCP(ctx context.Context, fix *Fixtures, o MCPOptions) ([]MCPResult, error) {
	tmp, err := os.MkdirTemp("", "benchreport-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "browserchain-mcp")
	Progress("mcp: building examples/mcp")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/mcp")
	build.Dir = o.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build examples/mcp: %w: %s", err, bytes.TrimSpace(out))
	}
	ch, err := StartChromium(ctx, "")
	if err != nil {
		return nil, err
	}
	defer ch.Close()

	peers := mcpPeers(bin, filepath.Join(tmp, "shots"))
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.name
	}
	set := newServerSet("mcp", names)
	defer set.close()
	results, servers, fail := set.results, set.servers, set.fail
	for i := range peers {
		p := &peers[i]
		results[i].Server = p.name
		for _, st := range MCPSteps {
			results[i].Steps = append(results[i].Steps, MCPStep{Step: st})
		}
		argv, why := p.command(ch.Port)
		if why != "" {
			results[i].Unavailable = why
			continue
		}
		Progress("mcp: starting %s", p.name)
		s, d, err := startMCP(ctx, p, argv, tmp)
		if err != nil {
			fail(i, err)
			continue
		}
		servers[i] = s
		results[i].Cold = append(results[i].Cold, d)
		lctx, cancel := context.WithTimeout(ctx, stepTimeout)
		tl, err := s.session.ListTools(lctx, nil)
		cancel()
		if err != nil {
			fail(i, fmt.Errorf("tools/list: %w", err))
			continue
		}
		results[i].Tools = len(tl.Tools)
		have := map[string]bool{}
		for _, t := range tl.Tools {
			have[t.Name] = true
		}
		var missing []string
		for _, c := range []mcpCall{p.navigate(""), p.snapshot, p.typeText("", ""), p.click(""), p.extract, p.screenshot} {
			if !have[c.tool] {
				missing = append(missing, c.tool)
			}
		}
		if len(missing) > 0 {
			fail(i, fmt.Errorf("tools/list lacks %s", strings.Join(missing, ", ")))
			continue
		}
		if p.ownPage != nil {
			front, err := p.ownPage(ctx, s, ch.Port)
			if err != nil {
				fail(i, fmt.Errorf("opening a page of its own: %w", err))
				continue
			}
			s.front = front
		}
	}

	order := newRounds(len(peers))
	stopped := make([]bool, len(peers))
	for n := 0; n < o.Warmup+o.Rounds; n++ {
		Progress("mcp: round %d of %d", n+1, o.Warmup+o.Rounds)
		for _, i := range order.next() {
			if servers[i] == nil {
				continue
			}
			if err := runMCPScenario(ctx, servers[i], fix, &results[i], n >= o.Warmup); err != nil {
				fail(i, err)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if servers[i] != nil && results[i].brokenSteps() {
				// The same step failed twice: later rounds would spend a
				// timeout on it each; what was measured stays reported.
				results[i].Stopped = "after round " + strconv.Itoa(n+1) + ": a step failed in two rounds"
				Progress("mcp: %s stops %s", peers[i].name, results[i].Stopped)
				results[i].RSS = treeRSS(servers[i].cmd.Process.Pid)
				servers[i].close()
				servers[i] = nil
				stopped[i] = true
			}
		}
	}
	for i, s := range servers {
		if s != nil {
			results[i].RSS = treeRSS(s.cmd.Process.Pid)
		}
	}
	// Cold starts: a fresh process per sample, interleaved; the first
	// sample is the start above.
	for c := 1; c < o.Cold; c++ {
		for _, i := range order.next() {
			if servers[i] == nil && !stopped[i] {
				continue
			}
			argv, _ := peers[i].command(ch.Port)
			s, d, err := startMCP(ctx, &peers[i], argv, tmp)
			if err != nil {
				fail(i, err)
				continue
			}
			results[i].Cold = append(results[i].Cold, d)
			s.close()
		}
	}
	return results, nil
}

// errSkipped marks a step that did not run because one it needs failed.
var errSkipped = errors.New("not run: an earlier step of the round failed")

// runMCPScenario runs the scenario once on s; keep records the figures. A
// failing step is recorded on its row (with the steps that need its answer)
// and the round goes on with the steps that do not; the error returned is
// one that leaves the server unusable (its session gone).
func runMCPScenario(ctx context.Context, s *mcpServer, fix *Fixtures, r *MCPResult, keep bool) error {
	p := s.peer
	failed := func(step string, err error) {
		if !keep {
			return
		}
		m := r.Step(step)
		m.Failed++
		if m.Err == "" {
			m.Err = err.Error()
		}
	}
	record := func(step string, c mcpCall) (string, error) {
		text, n, st, d, err := s.call(ctx, c)
		if err != nil {
			failed(step, err)
			return "", err
		}
		if keep {
			m := r.Step(step)
			m.D = append(m.D, d)
			m.Bytes = append(m.Bytes, float64(n))
			m.Structured = append(m.Structured, float64(st))
		}
		return text, nil
	}
	gone := func(err error) bool {
		return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, context.Canceled) && ctx.Err() != nil
	}
	skip := func(steps ...string) {
		for _, st := range steps {
			failed(st, errSkipped)
		}
	}
	if s.front != nil {
		if err := s.front(ctx); err != nil {
			if gone(err) {
				return err
			}
			skip(MCPSteps...)
			return nil
		}
	}
	form := []string{StepSnapshot, StepType, StepClick, StepExtract, StepScreenshot, StepShotIdle}
	if _, err := record(StepNavigate, p.navigate(fix.URL(PageForm))); err != nil {
		if gone(err) {
			return err
		}
		skip(form...)
	} else {
		formSteps(s, record, failed, skip)
	}
	for _, pg := range []struct{ path, step string }{{PageArticle, StepArticle}, {PageBig, StepBig}} {
		if _, _, _, _, err := s.call(ctx, p.navigate(fix.URL(pg.path))); err != nil {
			if gone(err) {
				return err
			}
			failed(pg.step, fmt.Errorf("navigate %s: %w", pg.path, err))
			continue
		}
		if _, err := record(pg.step, p.snapshot); err != nil && gone(err) {
			return err
		}
	}
	return nil
}

// formSteps runs the form page's steps after its navigation: snapshot,
// type, click, extract (which checks what the page shows), screenshot, and
// a screenshot again once the page has been idle for shotIdle.
func formSteps(s *mcpServer, record func(string, mcpCall) (string, error), failed func(string, error), skip func(...string)) {
	p := s.peer
	defer func() {
		_, _ = record(StepScreenshot, p.screenshot)
		time.Sleep(shotIdle) // the measured condition (an idle page), not synchronisation
		_, _ = record(StepShotIdle, p.screenshot)
	}()
	snap, err := record(StepSnapshot, p.snapshot)
	if err != nil {
		skip(StepType, StepClick, StepExtract)
		return
	}
	field, err := findRef(p.refRE, snap, "textbox", "Display name")
	if err == nil {
		var button string
		if button, err = findRef(p.refRE, snap, "button", "Apply"); err == nil {
			if _, err = record(StepType, p.typeText(field, FormText)); err != nil {
				skip(StepClick, StepExtract)
				return
			}
			if _, err = record(StepClick, p.click(button)); err != nil {
				skip(StepExtract)
				return
			}
			out, err := record(StepExtract, p.extract)
			if err == nil && !strings.Contains(out, FormResult) {
				failed(StepExtract, fmt.Errorf("the page shows no %q after type and click (got %.200q)", FormResult, out))
			}
			return
		}
	}
	failed(StepType, fmt.Errorf("%s: %w", StepSnapshot, err))
	skip(StepClick, StepExtract)
}

// brokenSteps reports whether a step failed in two kept rounds.
func (r *MCPResult) brokenSteps() bool {
	for _, st := range r.Steps {
		if st.Failed >= 2 && !strings.HasPrefix(st.Err, errSkipped.Error()) {
			return true
		}
	}
	return false
}

// treeRSS sums VmRSS (bytes) of pid and its descendants.
func treeRSS(pid int) float64 {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces.
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 {
				if pp, err := strconv.Atoi(f[1]); err == nil {
					children[pp] = append(children[pp], c)
				}
			}
		}
	}
	var total float64
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		total += vmRSS(p)
		stack = append(stack, children[p]...)
	}
	return total
}

func vmRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb * 1024
			}
		}
	}
	return 0
}

var errNoJSON = errors.New("benchreport: structured content is not JSON")

func jsonLen(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, errNoJSON
	}
	return len(b), nil
}

// serverSet is the MCP servers of one phase and their results, by peer
// index: servers[i] is nil until peer i started and after it failed.
type serverSet struct {
	phase   string
	names   []string
	servers []*mcpServer
	results []MCPResult
}

func newServerSet(phase string, names []string) *serverSet {
	return &serverSet{phase: phase, names: names, servers: make([]*mcpServer, len(names)), results: make([]MCPResult, len(names))}
}

// fail marks peer i unavailable with err and stops its server, if any.
func (s *serverSet) fail(i int, err error) {
	s.results[i].Unavailable = err.Error()
	if s.servers[i] != nil {
		s.servers[i].close()
		s.servers[i] = nil
	}
	Progress("%s: %s not available: %v", s.phase, s.names[i], err)
}

// close stops every server still running.
func (s *serverSet) close() {
	for _, srv := range s.servers {
		if srv != nil {
			srv.close()
		}
	}
}
