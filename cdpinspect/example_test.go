package cdpinspect_test

import (
	"errors"
	"fmt"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
)

// A provider proposes cdp-inspect for macos turns (desktop-auto) and skips
// other interfaces unless cdpInspect.enabled is set.
func ExampleProvider_Propose() {
	p := cdpinspect.NewProvider(cdpinspect.DefaultConfig())
	defer p.Close() // the browser WebSocket its Builds share
	env := bb.Env{Cooldowns: &bb.Cooldowns{}}

	c, _ := p.Propose(bb.Invocation{InterfaceID: "macos"}, env)
	fmt.Println(c.Reason, c.CooldownKey, c.CooldownFor)

	_, err := p.Propose(bb.Invocation{InterfaceID: "cli"}, env)
	var skip *bb.SkipError
	if errors.As(err, &skip) {
		fmt.Println("skipped:", skip.Code)
	}
	// Output:
	// desktopAuto: macos turn desktop-auto 30s
	// skipped: not_configured
}

// DecodeVersion applies the discovery rules to a /json/version answer.
func ExampleDecodeVersion() {
	ws, err := cdpinspect.DecodeVersion([]byte(`{"Browser":"Chrome/156.0.8078.108","webSocketDebuggerUrl":"ws://localhost:9222/devtools/browser/abc"}`))
	fmt.Println(ws, err)
	_, err = cdpinspect.DecodeVersion([]byte(`{"Browser":"node.js/v20.1.0"}`))
	fmt.Println(errors.Is(err, bb.ErrNonChrome))
	// Output:
	// ws://localhost:9222/devtools/browser/abc <nil>
	// true
}
