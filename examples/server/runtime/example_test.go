package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

// Run one command by hand. No extension is connected, so the auto chain
// skips it and the fallback (here a fake local backend) serves.
func ExampleRuntime_Run() {
	local := &browserbackendtest.Provider{K: browserbackend.KindLocal}
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte{1}, 32), Fallbacks: []browserbackend.Provider{local}})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	out, err := rt.Run(context.Background(), runtime.CommandRequest{
		ConversationID: "c1", BrowserMode: "auto", Method: "Browser.getVersion", Params: json.RawMessage(`{}`),
	})
	fmt.Println(out.Backend, err)
	for _, a := range out.Attempts {
		fmt.Println(a.Kind, a.Stage, a.Code)
	}
	// Output:
	// local <nil>
	// extension candidate_selection no_client
	// host-bridge candidate_selection no_client
	// local success
}
