package browserbackendtest_test

import (
	"context"
	"fmt"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// A host app tests its selector wiring against a fake roster: alice's
// extension is connected but its transport is dead, so the invocation fails
// over to desktop-auto cdp-inspect on a macos turn.
func ExampleReference() {
	roster := hostproxytest.NewRoster(hostproxytest.HubClient{ID: "ext-1", InterfaceID: hostproxytest.InterfaceChromeExtension, Actor: "alice"})
	farm := (&bbt.Farm{}).FailSend(bb.KindExtension, bbt.TransportErr(bb.CodeUnreachable))
	sel := bb.NewSelector(bb.Options{
		Providers: hostproxytest.Reference{Roster: roster, Config: cdpinspect.DefaultConfig(), Farm: farm}.Providers(),
		Logger:    bbt.DiscardLogger(),
	})

	client := sel.Client(bb.Invocation{InterfaceID: "macos", ActorPrincipalID: "alice"})
	defer client.Close()
	_, err := client.Send(context.Background(), bb.Command{Method: "Page.enable"})
	fmt.Println(client.Kind(), err)
	fmt.Println(farm.Builds())
	// Output:
	// cdp-inspect <nil>
	// [{extension ext-1} {cdp-inspect }]
}
