package hostproxy_test

import (
	"errors"
	"fmt"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy"
)

// A client's result content is classified by the wire contract: string
// transport codes fail over, numeric CDP codes do not.
func ExampleClassifyResult() {
	_, err := hostproxy.ClassifyResult("Page.navigate", browserbackend.KindHostBridge,
		`{"code":"unreachable","message":"no Chrome with a debug port"}`, true)
	fmt.Println(errors.Is(err, browserbackend.ErrTransport))

	_, err = hostproxy.ClassifyResult("Nope.nope", browserbackend.KindHostBridge,
		`{"code":-32601,"message":"'Nope.nope' wasn't found"}`, true)
	fmt.Println(errors.Is(err, browserbackend.ErrProtocol), errors.Is(err, browserbackend.ErrMethodNotFound))

	res, _ := hostproxy.ClassifyResult("Runtime.evaluate", browserbackend.KindHostBridge,
		`{"result":{"type":"number","value":2}}`, false)
	fmt.Println(string(res))
	// Output:
	// true
	// true true
	// {"result":{"type":"number","value":2}}
}
