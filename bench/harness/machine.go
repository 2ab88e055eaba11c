package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/browserchain/browserchain/local"
)

// Machine describes where the run happened.
type Machine struct {
	CPU       string
	Cores     int
	MemTotal  string
	Kernel    string
	Go        string
	Chromium  string
	Node      string
	Commit    string
	Libraries [][2]string // module path, version
	LoadStart string
	LoadEnd   string
}

// LoadAvg returns /proc/loadavg's first three fields.
func LoadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func command(dir string, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "n/a"
	}
	return strings.TrimSpace(string(out))
}

// libraries whose versions the report names.
var libraries = []string{
	"github.com/chromedp/chromedp",
	"github.com/chromedp/cdproto",
	"github.com/coder/websocket",
	"github.com/mxschmitt/playwright-go",
	"github.com/mafredri/cdp",
	"github.com/tmaxmax/go-sse",
	"github.com/golang-jwt/jwt/v5",
	"github.com/go-chi/httprate",
}

// DescribeMachine collects the machine, toolchain and library versions; the
// Chromium product comes from Browser.getVersion on the world's browser.
func DescribeMachine(ctx context.Context, w *World) Machine {
	m := Machine{
		CPU:      procField("/proc/cpuinfo", "model name"),
		Cores:    runtime.NumCPU(),
		MemTotal: procField("/proc/meminfo", "MemTotal"),
		Kernel:   command("", "uname", "-sr"),
		Go:       runtime.Version(),
		Node:     command("", "node", "--version"),
		Commit:   command(w.Root, "git", "rev-parse", "--short", "HEAD"),
	}
	if w.Chromium == nil {
		// A run without the world's browser: ask a local Chromium.
		m.Chromium = command("", ChromiumPath(), "--version")
	} else if r, err := DialRaw(ctx, w.Chromium.WSURL); err == nil {
		if res, err := r.Call(ctx, "", "Browser.getVersion", nil); err == nil {
			var v struct{ Product, Revision string }
			_ = json.Unmarshal(res, &v)
			m.Chromium = v.Product
		}
		r.Close()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		byPath := map[string]string{}
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version
			}
			byPath[d.Path] = v
		}
		for _, l := range libraries {
			if v, ok := byPath[l]; ok {
				m.Libraries = append(m.Libraries, [2]string{l, v})
			}
		}
	}
	m.Libraries = append(m.Libraries, [2]string{"playwright-core (driver)", local.DriverVersion})
	return m
}
