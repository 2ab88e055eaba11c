package extension_test

import (
	"fmt"

	"github.com/browserchain/browserchain/examples/extension"
)

// A runtime allows the reference extension to pair by its fixed origin.
func Example() {
	fmt.Println(extension.Origin)
	// Output: chrome-extension://fnkhihckcobbnjjhjjacjdbbidilbmnl
}
