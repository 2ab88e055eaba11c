package auth_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/hostproxy/auth"
)

func TestVerifyClient_AcceptsTheBoundClientAndRefusesEverythingElse(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Config{Key: bytes.Repeat([]byte("k"), 32), Now: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	bound, err := a.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1", DeviceID: "d1"})
	require.NoError(t, err)
	unbound, err := a.Mint(auth.Grant{InterfaceID: "macos"})
	require.NoError(t, err)

	actor, iface, err := a.VerifyClient(ctx, bound.Token, "c1", "")
	require.NoError(t, err)
	assert.Equal(t, auth.DefaultActor, actor)
	assert.Equal(t, "chrome-extension", iface, "a client that claims no interface is registered as the token's")
	_, _, err = a.VerifyClient(ctx, bound.Token, "c2", "")
	assert.ErrorIs(t, err, auth.ErrClientMismatch)
	actor, iface, err = a.VerifyClient(ctx, unbound.Token, "any", "macos")
	require.NoError(t, err, "a token bound to no client may name its client id, as on the HTTP routes")
	assert.Equal(t, auth.DefaultActor, actor)
	assert.Equal(t, "macos", iface)
	_, _, err = a.VerifyClient(ctx, bound.RefreshToken, "c1", "")
	assert.ErrorIs(t, err, auth.ErrTokenWrongKind)
	_, _, err = a.VerifyClient(ctx, "garbage", "c1", "")
	assert.ErrorIs(t, err, auth.ErrTokenInvalid)
	_, _, err = a.VerifyClient(ctx, bound.Token, "", "")
	assert.Error(t, err)

	// The interface decides what the hub trusts a client with: an
	// extension's token cannot register as a desktop client, nor the
	// reverse (as Middleware refuses it on GET /v1/events).
	_, _, err = a.VerifyClient(ctx, bound.Token, "c1", "macos")
	assert.ErrorIs(t, err, auth.ErrInterfaceMismatch)
	_, _, err = a.VerifyClient(ctx, unbound.Token, "any", "chrome-extension")
	assert.ErrorIs(t, err, auth.ErrInterfaceMismatch)
	_, iface, err = a.VerifyClient(ctx, unbound.Token, "any", "")
	require.NoError(t, err)
	assert.Equal(t, "macos", iface, "a desktop token that claims nothing is not taken for the extension")
	noIface, err := a.Mint(auth.Grant{})
	require.NoError(t, err)
	_, iface, err = a.VerifyClient(ctx, noIface.Token, "any", "windows")
	require.NoError(t, err, "a token issued for no interface may claim one")
	assert.Equal(t, "windows", iface)

	other, err := auth.New(auth.Config{Key: bytes.Repeat([]byte("o"), 32), Now: func() time.Time { return now }})
	require.NoError(t, err)
	forged, err := other.Mint(auth.Grant{ClientID: "c1"})
	require.NoError(t, err)
	_, _, err = a.VerifyClient(ctx, forged.Token, "c1", "")
	assert.ErrorIs(t, err, auth.ErrTokenInvalid)

	now = now.Add(25 * time.Hour)
	_, _, err = a.VerifyClient(ctx, bound.Token, "c1", "")
	assert.ErrorIs(t, err, auth.ErrTokenExpired)
}
