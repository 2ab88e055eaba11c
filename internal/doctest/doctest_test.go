package doctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// root is the repository root, two levels above this package.
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

// pages returns the README and the topic pages under docs/ (the
// requirements, docs/SPEC.md, are not a user page).
func pages(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	out := map[string]string{}
	for _, f := range files {
		if filepath.Base(f) == "SPEC.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out[rel] = string(b)
	}
	return out
}

// block is one fenced code block of a page.
type block struct {
	page, lang, text string
}

var fence = regexp.MustCompile("(?ms)^[ \t]*```([a-z]*)[^\n]*\n(.*?)^[ \t]*```")

func blocks(t *testing.T, lang string) []block {
	var out []block
	for page, text := range pages(t) {
		for _, m := range fence.FindAllStringSubmatch(text, -1) {
			if m[1] == lang {
				out = append(out, block{page: page, lang: m[1], text: dedent(m[2])})
			}
		}
	}
	return out
}

// dedent removes the indentation of the block's first line from every line
// (blocks inside list items are indented).
func dedent(s string) string {
	first := s[:len(s)-len(strings.TrimLeft(s, " \t"))]
	if first == "" {
		return s
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		b.WriteString(strings.TrimPrefix(l, first))
	}
	return b.String()
}

func TestReadmeKeepsTheTwoCommandsAndItsSize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 20*1024 {
		t.Errorf("README.md is %d bytes; keep it at most 20 KB and move detail to docs/", len(b))
	}
	for _, want := range []string{"## The two commands", "make demo", "make test"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("README.md lost %q", want)
		}
	}
}

// TestGoProgramsBuild builds every ```go block whose first line is a package
// clause, each as its own main package placed in the module by an overlay,
// and requires it gofmt'd. Other ```go blocks are fragments and only shown.
func TestGoProgramsBuild(t *testing.T) {
	dir := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	where := map[string]string{}
	for i, b := range blocks(t, "go") {
		if !strings.HasPrefix(strings.TrimSpace(b.text), "package ") {
			continue
		}
		if formatted, err := format.Source([]byte(b.text)); err != nil {
			t.Errorf("%s: program %d does not parse: %v", b.page, i, err)
			continue
		} else if string(formatted) != b.text {
			t.Errorf("%s: program %d is not gofmt'd", b.page, i)
		}
		src := filepath.Join(dir, fmt.Sprintf("prog%d.go", i))
		if err := os.WriteFile(src, []byte(b.text), 0o600); err != nil {
			t.Fatal(err)
		}
		pkg := fmt.Sprintf("./internal/doctest/prog%d", i)
		overlay[filepath.Join(root, "internal", "doctest", fmt.Sprintf("prog%d", i), "main.go")] = src
		pkgs = append(pkgs, pkg)
		where[pkg] = b.page
	}
	if len(pkgs) < 2 {
		t.Fatalf("found %d complete programs; the README has at least two", len(pkgs))
	}
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-overlay", ovFile}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a documented program does not build (%v):\n%s\n(packages: %v)", err, out, where)
	}
}

// goRun matches a documented invocation of an example program, with an
// optional operator verb, up to the end of the shell command.
var goRun = regexp.MustCompile(`go run \./examples/([a-z]+)((?: [^\n|&;>` + "`" + `]*(?:\\\n)?)*)`)

var flagArg = regexp.MustCompile(`(?:^|\s)--?([a-z][a-z0-9-]*)`)

// TestDocumentedFlagsExist checks that every flag a page passes to an
// example program is one the program's -h lists. The programs are built in
// one go build and only ever run with -h; a program that parses no flags is
// never run.
func TestDocumentedFlagsExist(t *testing.T) {
	type use struct{ page, prog, verb, cmd, flag string }
	var uses []use
	progs := map[string]bool{}
	verbs := map[string]bool{"pair": true, "devices": true, "revoke": true}
	for page, text := range pages(t) {
		for _, m := range goRun.FindAllStringSubmatch(text, -1) {
			prog, args := m[1], strings.ReplaceAll(m[2], "\\\n", " ")
			args, _, _ = strings.Cut(args, " --method ") // the MCP Inspector's own flags follow
			src, err := os.ReadFile(filepath.Join(root, "examples", prog, "main.go"))
			if err != nil {
				t.Errorf("%s runs ./examples/%s, which is not a program", page, prog)
				continue
			}
			verb := ""
			if f := strings.Fields(args); len(f) > 0 && verbs[f[0]] && prog == "server" {
				verb = f[0]
			}
			for _, fm := range flagArg.FindAllStringSubmatch(args, -1) {
				if fm[1] == "h" || fm[1] == "help" || (fm[1] == "all" && verb == "revoke") {
					continue
				}
				if !bytes.Contains(src, []byte("flag.")) {
					t.Errorf("%s passes -%s to ./examples/%s, which parses no flags", page, fm[1], prog)
					continue
				}
				uses = append(uses, use{page, prog, verb, strings.TrimRight(m[0], " \n"), fm[1]})
				progs[prog] = true
			}
		}
	}
	if len(uses) == 0 {
		t.Fatal("no documented flags found: the pattern no longer matches the pages")
	}
	bin := t.TempDir()
	build := []string{"build", "-o", bin + string(filepath.Separator)}
	for p := range progs {
		build = append(build, "./examples/"+p)
	}
	cmd := exec.Command("go", build...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", build, err, out)
	}
	helps := map[string]string{}
	for _, u := range uses {
		key := u.prog + " " + u.verb
		if _, ok := helps[key]; !ok {
			args := []string{"-h"}
			if u.verb != "" {
				args = []string{u.verb, "-h"}
			}
			out, _ := exec.Command(filepath.Join(bin, u.prog), args...).CombinedOutput() // -h may exit non-zero
			if !bytes.Contains(out, []byte("Usage of")) {
				t.Fatalf("%s %v printed no usage:\n%s", u.prog, args, out)
			}
			helps[key] = string(out)
		}
		h := helps[key]
		if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(u.flag) + `[ \t\n]`).MatchString(h + "\n") {
			t.Errorf("%s: `%s` passes -%s, which `%s %s -h` does not list", u.page, u.cmd, u.flag, u.prog, u.verb)
		}
	}
}

// TestRelativeLinksResolve checks every [text](path) link that is not a URL.
func TestRelativeLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for page, text := range pages(t) {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(root, filepath.Dir(page), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
			}
		}
	}
}

// TestServerCommandAsDocumented starts the reference server without browser
// backends on a loopback port and runs docs/server.md's first curl against
// it: the body must be accepted (no bad_request) and the answer must carry
// the documented fields.
func TestServerCommandAsDocumented(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	var curl string
	for _, b := range blocks(t, "sh") {
		if b.page == filepath.Join("docs", "server.md") && strings.Contains(b.text, "curl -s 127.0.0.1:7830/v1/browser/command") {
			curl = b.text[strings.Index(b.text, "curl "):]
			break
		}
	}
	if curl == "" {
		t.Fatal("docs/server.md has no curl to /v1/browser/command")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", exe, "./examples/server")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, exe, "-listen", "127.0.0.1:0", "-key-file", filepath.Join(dir, "server.key"), "-local=false")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addr := ""
	sc := bufio.NewScanner(stderr)
	for addr == "" && sc.Scan() {
		if m := regexp.MustCompile(`msg="reference server listening".* addr=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("the server never logged its address")
	}
	go func() { // keep draining the log so the server never blocks on it
		for sc.Scan() {
		}
	}()
	out, err := exec.CommandContext(ctx, "sh", "-c", strings.ReplaceAll(curl, "127.0.0.1:7830", addr)).Output()
	if err != nil {
		t.Fatalf("the documented curl failed: %v", err)
	}
	var resp struct {
		Attempts []map[string]any `json:"attempts"`
		Error    *struct {
			Class, Code string
		} `json:"error"`
		Report string `json:"report"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, out)
	}
	if resp.Error == nil || resp.Error.Code == "bad_request" || len(resp.Attempts) == 0 || resp.Report == "" {
		t.Fatalf("with no backend the documented command should be refused with every attempt and a report, got %s", out)
	}
}
