package harness

import (
	"testing"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/hostproxy/auth"
)

// BenchmarkTokenVerify measures one access-token check (HS256 JWT parse and
// verify), which the result route runs once per result post behind
// auth.Middleware, and twice in examples/server/runtime (auth.Identify, then
// Middleware).
func BenchmarkTokenVerify(b *testing.B) {
	s, err := StartServer()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tok, err := s.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS, ClientID: "c"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Auth.Verify(tok.Token, auth.ScopeActorClient); err != nil {
			b.Fatal(err)
		}
	}
}
