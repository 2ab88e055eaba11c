package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Steps of §8's new tools, in report order.
const (
	StepBack       = "history: back"
	StepForward    = "history: forward"
	StepReload     = "history: reload"
	StepEvaluate   = "evaluate (document.title)"
	StepConsole    = "console messages"
	StepNetwork    = "network requests"
	StepFillForm   = "fill a form (text, select, checkbox)"
	StepDrag       = "drag and drop"
	StepDialog     = "dialog: accept an alert"
	StepUpload     = "file upload"
	StepDownload   = "download (click a link)"
	StepPDF        = "save as PDF"
	StepResize     = "resize the viewport"
	StepTabsList   = "tabs: list"
	StepTabsOpen   = "tabs: open"
	StepTabsSelect = "tabs: select"
	StepTabsClose  = "tabs: close"
)

// NewToolSteps lists the new tools' steps in report order.
var NewToolSteps = []string{StepBack, StepForward, StepReload, StepEvaluate, StepConsole, StepNetwork, StepFillForm,
	StepDrag, StepDialog, StepUpload, StepDownload, StepPDF, StepResize, StepTabsList, StepTabsOpen, StepTabsSelect, StepTabsClose}

// uploadName is the file every server uploads in the upload step.
const uploadName = "bench-upload.txt"

// newToolsRound runs the new tools' steps once on one server.
type newToolsRound func(t *toolRound) error

// toolRound is one round of the new tools on one server: its calls, and
// where their figures go.
type toolRound struct {
	ctx  context.Context
	s    *mcpServer
	r    *MCPResult
	fix  *Fixtures
	keep bool
	n    int    // round number (the resize alternates its size)
	file string // absolute path of the upload file
}

// errNoTool marks a step whose tool the server does not have.
var errNoTool = errors.New("no such tool")

// untimed runs c, not measured.
func (t *toolRound) untimed(c mcpCall) (string, error) {
	text, _, _, _, err := t.s.call(t.ctx, c)
	return text, err
}

// timed runs calls in order as one step: its duration and bytes are their
// sums (a server that needs two calls for the step pays both). A step that
// failed in two kept rounds is not run again.
func (t *toolRound) timed(step string, calls ...mcpCall) (string, error) {
	m := t.r.Step(step)
	if m.Failed >= 2 {
		return "", errSkipped
	}
	var total time.Duration
	var n, st int
	var last string
	for _, c := range calls {
		text, bn, sn, d, err := t.s.call(t.ctx, c)
		if err != nil {
			t.failed(step, err)
			return "", err
		}
		total, n, st, last = total+d, n+bn, st+sn, text
	}
	if t.keep {
		m.D = append(m.D, total)
		m.Bytes = append(m.Bytes, float64(n))
		m.Structured = append(m.Structured, float64(st))
	}
	return last, nil
}

func (t *toolRound) failed(step string, err error) {
	if !t.keep {
		return
	}
	m := t.r.Step(step)
	m.Failed++
	if m.Err == "" {
		m.Err = err.Error()
	}
}

// gone reports whether err leaves the server unusable.
func (t *toolRound) gone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, context.Canceled) && t.ctx.Err() != nil
}

// historySetup loads the tools page, then the second page (untimed), so
// that back and forward have somewhere to go.
func (t *toolRound) historySetup(nav func(string) mcpCall) error {
	if _, err := t.untimed(nav(t.fix.URL(PageTools))); err != nil {
		return err
	}
	_, err := t.untimed(nav(t.fix.URL(PageTools2)))
	return err
}

// resizeTo is the viewport the round's resize sets: two sizes in turn, so
// that each resize changes it.
func (t *toolRound) resizeTo() (w, h int) {
	if t.n%2 == 0 {
		return 1000, 700
	}
	return 1024, 768
}

// bcCurrentTab finds the current tab's line in browserchain's browser_tabs
// text ("* <id> "title" url").
var bcCurrentTab = regexp.MustCompile(`(?m)^\* (\S+) "`)

// browserchainRound is the new tools' steps on examples/mcp: elements by
// CSS selector, no snapshot needed.
func browserchainRound(t *toolRound) error {
	nav := func(u string) mcpCall { return mcpCall{"browser_navigate", map[string]any{"url": u}} }
	if err := t.historySetup(nav); err != nil {
		return err
	}
	_, _ = t.timed(StepBack, mcpCall{"browser_history", map[string]any{"step": "back"}})
	_, _ = t.timed(StepForward, mcpCall{"browser_history", map[string]any{"step": "forward"}})
	if _, err := t.untimed(mcpCall{"browser_history", map[string]any{"step": "back"}}); err != nil {
		return err
	}
	_, _ = t.timed(StepReload, mcpCall{"browser_history", map[string]any{"step": "reload"}})
	_, _ = t.timed(StepEvaluate, mcpCall{"browser_evaluate", map[string]any{"function": "() => document.title"}})
	_, _ = t.timed(StepConsole, mcpCall{"browser_console_messages", map[string]any{}})
	_, _ = t.timed(StepNetwork, mcpCall{"browser_network_requests", map[string]any{}})
	_, _ = t.timed(StepFillForm, mcpCall{"browser_fill_form", map[string]any{"fields": []map[string]any{
		{"selector": "#name", "value": FormText}, {"selector": "#color", "value": "green"}, {"selector": "#agree", "value": "true"}}}})
	_, _ = t.timed(StepDrag, mcpCall{"browser_drag", map[string]any{"from": map[string]any{"selector": "#src"}, "to": map[string]any{"selector": "#dst"}}})
	if _, err := t.untimed(mcpCall{"browser_click", map[string]any{"selector": "#alert"}}); err == nil {
		_, _ = t.timed(StepDialog, mcpCall{"browser_handle_dialog", map[string]any{"accept": true}})
	} else {
		t.failed(StepDialog, err)
	}
	_, _ = t.timed(StepUpload, mcpCall{"browser_file_upload", map[string]any{"paths": []string{uploadName}, "selector": "#file"}})
	_, _ = t.timed(StepDownload, mcpCall{"browser_click", map[string]any{"selector": "#dl"}})
	_, _ = t.timed(StepPDF, mcpCall{"browser_pdf_save", map[string]any{}})
	w, h := t.resizeTo()
	_, _ = t.timed(StepResize, mcpCall{"browser_resize", map[string]any{"width": w, "height": h}})

	t.tabSteps(bcCurrentTab, mcpCall{"browser_tabs", map[string]any{}},
		mcpCall{"browser_tabs", map[string]any{"action": "new", "url": t.fix.URL(PageTools2)}},
		func(id string) mcpCall {
			return mcpCall{"browser_tabs", map[string]any{"action": "select", "tab_id": id}}
		},
		func(id string) mcpCall {
			return mcpCall{"browser_tabs", map[string]any{"action": "close", "tab_id": id}}
		})
	return nil
}

// tabSteps times the four tab steps: list, open (current finds the current
// tab's id in each answer), select the tab current before the open, close
// the opened one.
func (t *toolRound) tabSteps(current *regexp.Regexp, list, open mcpCall, sel, cls func(id string) mcpCall) {
	listed, err := t.timed(StepTabsList, list)
	if err != nil {
		return
	}
	orig := current.FindStringSubmatch(listed)
	opened, err := t.timed(StepTabsOpen, open)
	if err != nil || orig == nil {
		return
	}
	added := current.FindStringSubmatch(opened)
	if added == nil {
		t.failed(StepTabsSelect, fmt.Errorf("no current tab after opening one (%.200q)", opened))
		return
	}
	_, _ = t.timed(StepTabsSelect, sel(orig[1]))
	_, _ = t.timed(StepTabsClose, cls(added[1]))
}

// pageID is a page id or tab index of a peer's tab list, as a number.
func pageID(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// devtoolsRound is the new tools' steps on Chrome DevTools MCP: elements
// by the uids of a snapshot taken (untimed) after the page loaded; pages by
// id. It has no PDF tool.
func devtoolsRound(t *toolRound) error {
	nav := func(u string) mcpCall { return mcpCall{"navigate_page", map[string]any{"type": "url", "url": u}} }
	if err := t.historySetup(nav); err != nil {
		return err
	}
	_, _ = t.timed(StepBack, mcpCall{"navigate_page", map[string]any{"type": "back"}})
	_, _ = t.timed(StepForward, mcpCall{"navigate_page", map[string]any{"type": "forward"}})
	if _, err := t.untimed(mcpCall{"navigate_page", map[string]any{"type": "back"}}); err != nil {
		return err
	}
	_, _ = t.timed(StepReload, mcpCall{"navigate_page", map[string]any{"type": "reload"}})
	_, _ = t.timed(StepEvaluate, mcpCall{"evaluate_script", map[string]any{"function": "() => document.title"}})
	_, _ = t.timed(StepConsole, mcpCall{"list_console_messages", map[string]any{}})
	_, _ = t.timed(StepNetwork, mcpCall{"list_network_requests", map[string]any{}})
	if err := devtoolsElementSteps(t); err != nil {
		return err
	}
	w, h := t.resizeTo()
	_, _ = t.timed(StepResize, mcpCall{"resize_page", map[string]any{"width": w, "height": h}})
	t.tabSteps(devtoolsSelected, mcpCall{"list_pages", map[string]any{}},
		mcpCall{"new_page", map[string]any{"url": t.fix.URL(PageTools2)}},
		func(id string) mcpCall {
			return mcpCall{"select_page", map[string]any{"pageId": pageID(id), "bringToFront": true}}
		},
		func(id string) mcpCall { return mcpCall{"close_page", map[string]any{"pageId": pageID(id)}} })
	return nil
}

// devtoolsElementSteps are Chrome DevTools MCP's steps on the page's
// elements, named by the uids of one snapshot (untimed).
func devtoolsElementSteps(t *toolRound) error {
	snap, err := t.untimed(mcpCall{"take_snapshot", map[string]any{}})
	if err != nil {
		return err
	}
	uid := func(role, name string) string {
		ref, _ := findRef(uidRef, snap, role, name)
		return ref
	}
	name, color, agree := uid("textbox", "Display name"), uid("combobox", "Colour"), uid("checkbox", "Agree")
	if name != "" && color != "" && agree != "" {
		_, _ = t.timed(StepFillForm, mcpCall{"fill_form", map[string]any{"elements": []map[string]any{
			{"uid": name, "value": FormText}, {"uid": color, "value": "green"}, {"uid": agree, "value": "true"}}}})
	} else {
		t.failed(StepFillForm, fmt.Errorf("the form's uids are not all in the snapshot (%q %q %q)", name, color, agree))
	}
	if src, dst := uid("button", "Drag me"), uid("region", "Drop zone"); src != "" && dst != "" {
		_, _ = t.timed(StepDrag, mcpCall{"drag", map[string]any{"from_uid": src, "to_uid": dst}})
	} else {
		t.failed(StepDrag, fmt.Errorf("no uid of the drag source or the drop zone in the snapshot"))
	}
	if alert := uid("button", "Alert"); alert != "" {
		if _, err := t.untimed(mcpCall{"click", map[string]any{"uid": alert}}); err == nil {
			_, _ = t.timed(StepDialog, mcpCall{"handle_dialog", map[string]any{"action": "accept"}})
		} else {
			t.failed(StepDialog, err)
		}
	}
	if file := uid("button", "Attachment"); file != "" {
		_, _ = t.timed(StepUpload, mcpCall{"upload_file", map[string]any{"uid": file, "filePaths": []string{t.file}}})
	} else {
		t.failed(StepUpload, fmt.Errorf("no uid of the file input in the snapshot"))
	}
	if dl := uid("link", "Download file"); dl != "" {
		_, _ = t.timed(StepDownload, mcpCall{"click", map[string]any{"uid": dl}})
	}
	return nil
}

// playwrightRound is the new tools' steps on Playwright MCP (started with
// --caps=pdf): elements by CSS selector (its target takes one). It goes
// back but has no forward or reload; its upload answers a file chooser, so
// the step clicks the file input first (both calls timed).
func playwrightRound(t *toolRound) error {
	nav := func(u string) mcpCall { return mcpCall{"browser_navigate", map[string]any{"url": u}} }
	if err := t.historySetup(nav); err != nil {
		return err
	}
	_, _ = t.timed(StepBack, mcpCall{"browser_navigate_back", map[string]any{}})
	// In place of the reload it lacks: the page loads again, so that the
	// console has its messages, as on the other servers.
	if _, err := t.untimed(nav(t.fix.URL(PageTools))); err != nil {
		return err
	}
	_, _ = t.timed(StepEvaluate, mcpCall{"browser_evaluate", map[string]any{"function": "() => document.title"}})
	_, _ = t.timed(StepConsole, mcpCall{"browser_console_messages", map[string]any{"level": "debug"}})
	_, _ = t.timed(StepNetwork, mcpCall{"browser_network_requests", map[string]any{"static": true}})
	_, _ = t.timed(StepFillForm, mcpCall{"browser_fill_form", map[string]any{"fields": []map[string]any{
		{"target": "#name", "name": "Display name", "type": "textbox", "value": FormText},
		{"target": "#color", "name": "Colour", "type": "combobox", "value": "green"},
		{"target": "#agree", "name": "Agree", "type": "checkbox", "value": "true"}}}})
	_, _ = t.timed(StepDrag, mcpCall{"browser_drag", map[string]any{"startElement": "Drag me", "startTarget": "#src",
		"endElement": "Drop zone", "endTarget": "#dst"}})
	if _, err := t.untimed(mcpCall{"browser_click", map[string]any{"element": "Alert button", "target": "#alert"}}); err == nil {
		_, _ = t.timed(StepDialog, mcpCall{"browser_handle_dialog", map[string]any{"accept": true}})
	} else {
		t.failed(StepDialog, err)
	}
	_, _ = t.timed(StepUpload, mcpCall{"browser_click", map[string]any{"element": "Attachment", "target": "#file"}},
		mcpCall{"browser_file_upload", map[string]any{"paths": []string{t.file}}})
	_, _ = t.timed(StepDownload, mcpCall{"browser_click", map[string]any{"element": "Download file link", "target": "#dl"}})
	_, _ = t.timed(StepPDF, mcpCall{"browser_pdf_save", map[string]any{}})
	w, h := t.resizeTo()
	_, _ = t.timed(StepResize, mcpCall{"browser_resize", map[string]any{"width": w, "height": h}})

	t.tabSteps(playwrightCurrent, mcpCall{"browser_tabs", map[string]any{"action": "list"}},
		mcpCall{"browser_tabs", map[string]any{"action": "new", "url": t.fix.URL(PageTools2)}},
		func(id string) mcpCall {
			return mcpCall{"browser_tabs", map[string]any{"action": "select", "index": pageID(id)}}
		},
		func(id string) mcpCall {
			return mcpCall{"browser_tabs", map[string]any{"action": "close", "index": pageID(id)}}
		})
	return nil
}

// newToolsPeer is one server of the new tools' comparison.
type newToolsPeer struct {
	mcpPeer
	round newToolsRound
	// lacks are the steps the server has no tool for.
	lacks []string
}

// newToolsDirs are the files of one mcptools run: its temp dir, the built
// examples/mcp, the upload and download directories and the file to upload.
type newToolsDirs struct {
	tmp, bin, uploads, downloads, file string
}

// prepareNewTools makes the run's directories and upload file and builds
// examples/mcp from root; the caller removes d.tmp.
func prepareNewTools(ctx context.Context, root string) (d newToolsDirs, err error) {
	if d.tmp, err = os.MkdirTemp("", "benchreport-mcptools-"); err != nil {
		return d, err
	}
	d.uploads, d.downloads = filepath.Join(d.tmp, "uploads"), filepath.Join(d.tmp, "downloads")
	for _, dir := range []string{d.uploads, d.downloads} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return d, err
		}
	}
	d.file = filepath.Join(d.uploads, uploadName)
	if err := os.WriteFile(d.file, []byte("a file to upload\n"), 0o600); err != nil {
		return d, err
	}
	d.bin = filepath.Join(d.tmp, "browserchain-mcp")
	Progress("mcptools: building examples/mcp")
	build := exec.CommandContext(ctx, "go", "build", "-o", d.bin, "./examples/mcp")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return d, fmt.Errorf("build examples/mcp: %w: %s", err, bytes.TrimSpace(out))
	}
	return d, nil
}

// newToolsPeers are the three servers of §8b: examples/mcp with upload and
// download directories, Chrome DevTools MCP, Playwright MCP with its PDF
// capability.
func newToolsPeers(d newToolsDirs) []newToolsPeer {
	base := mcpPeers(d.bin, filepath.Join(d.tmp, "shots"))
	peers := []newToolsPeer{
		{mcpPeer: base[0], round: browserchainRound},
		{mcpPeer: base[2], round: devtoolsRound, lacks: []string{StepPDF}},
		{mcpPeer: base[3], round: playwrightRound, lacks: []string{StepForward, StepReload}},
	}
	bcCommand := peers[0].command
	peers[0].command = func(port int) ([]string, string) {
		argv, why := bcCommand(port)
		return append(argv, "-upload-dir", d.uploads, "-download-dir", d.downloads), why
	}
	pwCommand := peers[2].command
	peers[2].command = func(port int) ([]string, string) {
		argv, why := pwCommand(port)
		if why != "" {
			return nil, why
		}
		return append(argv, "--caps=pdf"), ""
	}
	return peers
}

// start spawns p's server for the browser on port, lists its tools into
// res and opens its own page; a nil server and no error when p cannot run
// here (res.Unavailable says why).
func (p *newToolsPeer) start(ctx context.Context, port int, dir string, res *MCPResult) (*mcpServer, error) {
	res.Server = p.name
	for _, st := range NewToolSteps {
		res.Steps = append(res.Steps, MCPStep{Step: st})
	}
	for _, st := range p.lacks {
		res.Step(st).Err = errNoTool.Error()
	}
	argv, why := p.command(port)
	if why != "" {
		res.Unavailable = why
		return nil, nil
	}
	Progress("mcptools: starting %s", p.name)
	s, d, err := startMCP(ctx, &p.mcpPeer, argv, dir)
	if err != nil {
		return nil, err
	}
	res.Cold = append(res.Cold, d)
	lctx, cancel := context.WithTimeout(ctx, stepTimeout)
	tl, err := s.session.ListTools(lctx, nil)
	cancel()
	if err != nil {
		s.close()
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	res.Tools = len(tl.Tools)
	if s.front, err = p.ownPage(ctx, s, port); err != nil {
		s.close()
		return nil, fmt.Errorf("opening a page of its own: %w", err)
	}
	return s, nil
}

// MeasureMCPNewTools runs the new tools' steps (NewToolSteps) through
// browserchain's MCP server and the two peers, all attached to one headless
// Chromium of its own, in interleaved rounds, as MeasureMCP does. A step a
// server has no tool for is not run; a step that failed in two rounds is
// not run again.
func MeasureMCPNewTools(ctx context.Context, fix *Fixtures, o MCPOptions) ([]MCPResult, error) {
	d, err := prepareNewTools(ctx, o.Root)
	if d.tmp != "" {
		defer os.RemoveAll(d.tmp)
	}
	if err != nil {
		return nil, err
	}
	ch, err := StartChromium(ctx, "")
	if err != nil {
		return nil, err
	}
	defer ch.Close()

	peers := newToolsPeers(d)
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.name
	}
	set := newServerSet("mcptools", names)
	defer set.close()
	results, servers, fail := set.results, set.servers, set.fail
	for i := range peers {
		if servers[i], err = peers[i].start(ctx, ch.Port, d.tmp, &results[i]); err != nil {
			fail(i, err)
		}
	}

	order := newRounds(len(peers))
	for n := 0; n < o.Warmup+o.Rounds; n++ {
		Progress("mcptools: round %d of %d", n+1, o.Warmup+o.Rounds)
		for _, i := range order.next() {
			s := servers[i]
			if s == nil {
				continue
			}
			t := &toolRound{ctx: ctx, s: s, r: &results[i], fix: fix, keep: n >= o.Warmup, n: n, file: d.file}
			err := s.front(ctx)
			if err == nil {
				err = peers[i].round(t)
			}
			if err != nil && t.gone(err) {
				fail(i, err)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	for i, s := range servers {
		if s != nil {
			results[i].RSS = treeRSS(s.cmd.Process.Pid)
		}
	}
	return results, nil
}

// renderMCPNewTools writes §8's table of the new tools: per step, each
// server's median and browserchain against the faster peer.
func (r *Results) renderMCPNewTools(p func(string, ...any)) {
	if len(r.MCPNewTools) == 0 {
		return
	}
	rounds := 0
	for _, m := range r.MCPNewTools {
		for _, st := range m.Steps {
			rounds = max(rounds, len(st.D))
		}
	}
	p("## 8b. MCP servers: the new tools\n\n")
	p("The tools added since (history, evaluate, console and network, forms and drag, dialogs, uploads and downloads, "+
		"PDF, viewport, tabs) through the same three servers on one headless Chromium of this phase's own, started as "+
		"above (examples/mcp also with `-upload-dir` and `-download-dir`; Playwright MCP also with `--caps=pdf`, "+
		"which adds its PDF tool). One page on 127.0.0.1 holds a form (text, select, checkbox), a drag source and a "+
		"drop zone, an alert button, a file input and a download link, and logs to the console; a second page gives "+
		"history somewhere to go. browserchain and Playwright MCP name elements by CSS selector; Chrome DevTools MCP "+
		"by the uids of a snapshot taken, untimed, after the page loaded. The dialog step is the answer to an alert a "+
		"click (untimed) raised; Playwright MCP's upload answers a file chooser, so its step is the click on the file "+
		"input plus the upload. %d rounds after warm-up, servers in an order shuffled per round. Each cell is the "+
		"median (p99); \"no tool\" where a server has none. **vs faster peer** is browserchain's median over the "+
		"faster peer's.\n\n", rounds)
	p("| step |")
	for _, m := range r.MCPNewTools {
		p(" %s |", m.Server)
	}
	p(" vs faster peer |\n|---|")
	for range r.MCPNewTools {
		p("---|")
	}
	p("---|\n")
	for _, step := range NewToolSteps {
		p("| %s |", step)
		for i := range r.MCPNewTools {
			p(" %s |", newToolCell(&r.MCPNewTools[i], step))
		}
		p(" %s |\n", r.newToolVsPeer(step))
	}
	p("\n")
	for _, m := range r.MCPNewTools {
		if m.Unavailable != "" {
			p("%s: not available: %s\n\n", m.Server, cell(m.Unavailable))
		}
	}
}

func newToolCell(m *MCPResult, step string) string {
	if m.Unavailable != "" {
		return "n/a"
	}
	st := m.Step(step)
	switch {
	case st == nil || st.Err == errNoTool.Error():
		return "no tool"
	case len(st.D) == 0 && st.Failed > 0:
		return "failed: " + cell(truncate(st.Err, 120))
	case len(st.D) == 0:
		return "n/a"
	}
	s := fmt.Sprintf("%s (%s)", ms(st.D.Median()), ms(st.D.P99()))
	if st.Failed > 0 {
		s += fmt.Sprintf("; %d failed: %s", st.Failed, cell(truncate(st.Err, 120)))
	}
	return s
}

// newToolVsPeer is browserchain's median of step over the faster peer's,
// with met or missed; "" parts when a side has no figure.
func (r *Results) newToolVsPeer(step string) string {
	ours, peer, ok := r.newToolMedians(step)
	switch {
	case !ok:
		return "n/a"
	case peer == 0:
		return "no peer has the tool"
	}
	verdict := "met"
	if ours > peer {
		verdict = "**missed**"
	}
	return ratio(float64(ours), float64(peer)) + " " + verdict
}

// newToolMedians returns browserchain's median of step and the faster
// peer's (0 when no peer measured it); ok is false when browserchain has
// no figure.
func (r *Results) newToolMedians(step string) (ours, peer time.Duration, ok bool) {
	for i := range r.MCPNewTools {
		m := &r.MCPNewTools[i]
		if m.Unavailable != "" {
			continue
		}
		st := m.Step(step)
		if st == nil || len(st.D) == 0 {
			continue
		}
		d := st.D.Median()
		if strings.HasPrefix(m.Server, "browserchain") {
			ours, ok = d, true
			continue
		}
		if peer == 0 || d < peer {
			peer = d
		}
	}
	return ours, peer, ok
}

// newToolTargets is the Targets row of the new tools: browserchain at or
// under the faster peer on every step a peer has.
func (r *Results) newToolTargets() []Target {
	if len(r.MCPNewTools) == 0 {
		return nil
	}
	var met, n int
	var missed []string
	for _, step := range NewToolSteps {
		ours, peer, ok := r.newToolMedians(step)
		if !ok || peer == 0 {
			continue
		}
		n++
		if ours <= peer {
			met++
		} else {
			missed = append(missed, step)
		}
	}
	got := fmt.Sprintf("%d of %d steps", met, n)
	if len(missed) > 0 {
		got += "; over: " + strings.Join(missed, ", ")
	}
	return []Target{{"§8 new tools: browserchain's median ≤ the faster peer's, per step", got, n > 0 && met == n, false}}
}
