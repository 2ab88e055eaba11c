package auth

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
)

// ErrClientMismatch is returned by VerifyClient when the token is bound to
// another client id.
var ErrClientMismatch = errors.New("auth: token is bound to another client")

// ErrInterfaceMismatch is returned by VerifyClient when the token was issued
// for another interface than the one the client claims.
var ErrInterfaceMismatch = errors.New("auth: token was issued for another interface")

// VerifyClient authenticates a client that cannot send an Authorization
// header — the first message of hostproxy's result socket — with the same
// rules as Middleware: token must be a valid access token (ScopeActorClient;
// errors match ErrTokenExpired, ErrTokenWrongKind or ErrTokenInvalid); when
// it is bound to a client id, clientID must be that id (ErrClientMismatch);
// when it was issued for an interface, interfaceID ("" when the client
// claims none) must be that interface or empty (ErrInterfaceMismatch: an
// extension's token cannot register as a desktop client, nor the reverse).
// It returns the actor (the token's subject) and the interface the client
// is to be registered as: interfaceID, else the token's ("" when neither
// names one). Every denial is logged as an audit line, without the token.
// Its signature is hostproxy.VerifyFunc's; safe for concurrent use.
func (a *Authority) VerifyClient(ctx context.Context, token, clientID, interfaceID string) (actor, iface string, err error) {
	deny := func(code string, err error) (string, string, error) {
		a.log.LogAttrs(ctx, slog.LevelWarn, "auth: request denied",
			slog.String("module", "auth"), slog.String("route", "result-socket"),
			slog.String("code", code), slog.String("clientId", clientID), slog.String("reason", reasonOf(err)))
		return "", "", err
	}
	if !validClientID(clientID) || clientID == "" {
		return deny("bad_client_id", errors.New("auth: client id must be 1–256 printable characters"))
	}
	c, err := a.Verify(token, ScopeActorClient)
	if err != nil {
		return deny(tokenCode(err), err)
	}
	if c.ClientID != "" && c.ClientID != clientID {
		return deny("client_mismatch", ErrClientMismatch)
	}
	if c.InterfaceID != "" && interfaceID != "" && interfaceID != c.InterfaceID {
		return deny("interface_mismatch", ErrInterfaceMismatch)
	}
	return c.Subject, cmp.Or(interfaceID, c.InterfaceID), nil
}
