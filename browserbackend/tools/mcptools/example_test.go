package mcptools_test

import (
	"context"
	"fmt"
	"strings"

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

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{"browser_mode": "chrome"}})
	if err != nil {
		panic(err)
	}
	msg := res.Content[0].(*mcp.TextContent).Text
	fmt.Println(res.IsError, strings.SplitAfter(msg, ". ")[0])
	// Output:
	// 19 tools
	// true browser_snapshot refused: invalid browser_mode "chrome": accepted values are auto, extension, cdp-inspect, local (aliases: cdp-debugger = cdp-inspect, playwright = local).
}
