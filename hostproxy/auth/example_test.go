package auth_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/browserchain/browserchain/hostproxy/auth"
)

// A runtime mints a token for a paired extension and later verifies it.
func ExampleAuthority_Mint() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Config{
		Key:              bytes.Repeat([]byte{7}, 32), // use auth.LoadOrCreateKey in a real server
		ActorPrincipalID: "alice",
		Now:              func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	toks, _ := a.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "ext-1", DeviceID: "laptop"})
	c, err := a.Verify(toks.Token, auth.ScopeActorClient)
	fmt.Println(c.Actor(), c.ClientID, c.InterfaceID, toks.ExpiresAt, toks.RefreshToken != "", err)

	now = now.Add(25 * time.Hour)
	_, err = a.Verify(toks.Token, auth.ScopeActorClient)
	fmt.Println(err)
	// Output:
	// alice ext-1 chrome-extension 2026-01-02 00:00:00 +0000 UTC true <nil>
	// auth: token expired
}
