//go:build linux

package cdpinspect

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	bb "github.com/browserchain/browserchain/browserbackend"

	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestZZScratch(t *testing.T) {
	b := chromiumtest.Start(t)
	cfg := DefaultConfig()
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", b.Port, 5000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	be, err := Dial(ctx, cfg, WithWebSocketURL(b.BrowserWSURL))
	if err != nil {
		t.Fatal(err)
	}
	be.Send(ctx, cmdOf("Page.navigate", `{"url":"data:text/html,hi"}`))
	chromiumtest.Signal(chromiumtest.PageRenderers(b.UserDataDir), unix.SIGKILL)
	<-time.After(time.Second)
	be.Close()
	be2, err := Dial(ctx, cfg, WithWebSocketURL(b.BrowserWSURL))
	if err != nil {
		t.Fatal(err)
	}
	defer be2.Close()
	evs, stop := be2.Subscribe("")
	defer stop()
	go func() {
		for ev := range evs {
			t.Logf("ev2 %s %s", ev.Method, ev.SessionID)
		}
	}()
	sid := be2.SessionID()
	call := func(m, p string) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var raw json.RawMessage
		if p != "" {
			raw = json.RawMessage(p)
		}
		res, err := be2.c.call(c, m, raw, sid)
		t.Logf("%s -> %s %v", m, res, err)
	}
	call("Inspector.enable", "")
	call("Page.navigate", `{"url":"about:blank"}`)
	call("Page.enable", "")
	call("Runtime.evaluate", `{"expression":"location.href"}`)
	call("Page.navigate", `{"url":"data:text/html,hello"}`)
	call("Runtime.evaluate", `{"expression":"document.body.textContent"}`)
}

func cmdOf(m, p string) bb.Command { return bb.Command{Method: m, Params: json.RawMessage(p)} }
