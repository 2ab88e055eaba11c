package mcptools_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

// Put the browser tools on an MCP server and call one from the SDK's
// in-process client. A real host builds its Tools over a Selector with the
// extension, cdp-inspect and local providers; fakes stand in for them here.
func ExampleServer() {
	ctx := context.Background()
	tl, _ := fakeChain()
	srv := mcptools.New(mcptools.Options{Tools: tl, Logger: browserbackendtest.DiscardLogger()})
	defer srv.Close()

	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.NewMCPServer(nil).Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(list.Tools), "tools")
	props := list.Tools[0].InputSchema.(map[string]any)["properties"].(map[string]any)
	fmt.Println("browser_mode:", props["browser_mode"].(map[string]any)["enum"])

	// A value outside the enum is a tool error; no browser is asked.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{"browser_mode": "chrome"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("error:", res.IsError)
	// Output:
	// 31 tools
	// browser_mode: [auto extension cdp-inspect cdp-debugger local playwright]
	// error: true
}
