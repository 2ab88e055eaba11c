package auth

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// forwardingHeaders are headers a proxy adds. Any of them on a local-only
// route means the request did not come straight from this machine.
var forwardingHeaders = []string{
	"Forwarded",
	"X-Forwarded-For",
	"X-Forwarded-Host",
	"X-Forwarded-Proto",
	"X-Forwarded-Port",
	"X-Forwarded-Server",
	"X-Forwarded-Prefix",
	"X-Real-Ip",
	"X-Client-Ip",
	"X-Original-Forwarded-For",
	"X-Cluster-Client-Ip",
	"True-Client-Ip",
	"Cf-Connecting-Ip",
	"Fastly-Client-Ip",
	"Via",
}

// errorBody is the JSON shape of every error this package writes.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(b)
}

// deny writes an error and the audit line for it. Nothing secret is logged:
// the route, the peer, the status and the reason only.
func (a *Authority) deny(w http.ResponseWriter, r *http.Request, status int, code, msg string, attrs ...any) {
	base := []any{
		slog.String("module", "auth"),
		slog.String("route", r.URL.Path),
		slog.String("peer", r.RemoteAddr),
		slog.Int("status", status),
		slog.String("code", code),
		slog.String("interfaceId", r.Header.Get(wire.HeaderInterfaceID)),
		slog.String("clientId", r.Header.Get(wire.HeaderClientID)),
	}
	a.log.LogAttrs(r.Context(), slog.LevelWarn, "auth: request denied", attrsOf(append(base, attrs...))...)
	writeError(w, status, code, msg)
}

func attrsOf(xs []any) []slog.Attr {
	out := make([]slog.Attr, 0, len(xs))
	for _, x := range xs {
		if a, ok := x.(slog.Attr); ok {
			out = append(out, a)
		}
	}
	return out
}

// peerIP returns the IP of the TCP peer (never a header).
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// peerKey is the rate-limit key of r's peer: its IP, except that every
// loopback address (127.0.0.0/8, ::1) is the same machine and so the same
// key; otherwise a local process would get a fresh budget per source
// address.
func peerKey(r *http.Request) string {
	if ip := net.ParseIP(peerIP(r)); ip != nil && ip.IsLoopback() {
		return "loopback"
	}
	return peerIP(r)
}

// isLoopbackHost reports whether a Host header value (host[:port]) names
// this machine's loopback interface.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// localOnlyReason returns why r is not a direct loopback request, or "".
func localOnlyReason(r *http.Request) string {
	ip := net.ParseIP(peerIP(r))
	if ip == nil || !ip.IsLoopback() {
		return "non-loopback peer"
	}
	if !isLoopbackHost(r.Host) {
		return "non-loopback host header"
	}
	for _, h := range forwardingHeaders {
		if _, ok := r.Header[h]; ok {
			return "forwarding header " + h
		}
	}
	for h := range r.Header {
		if strings.HasPrefix(h, "X-Forwarded-") {
			return "forwarding header " + h
		}
	}
	return ""
}

// LocalOnly wraps next so that only direct loopback requests reach it: the
// TCP peer must be a loopback address, the Host header must name localhost
// or a loopback IP, and no forwarding header (Forwarded, X-Forwarded-*,
// X-Real-IP, Via, …) may be present. Anything else is answered 403
// {"error":{"code":"local_only","message":"endpoint is local-only"}} and
// logged.
func (a *Authority) LocalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := localOnlyReason(r); reason != "" {
			a.deny(w, r, http.StatusForbidden, "local_only", "endpoint is local-only", slog.String("reason", reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard is the middleware stack of both pairing routes: method, local-only,
// then the per-peer rate limit.
func (a *Authority) guard(h http.HandlerFunc) http.Handler {
	inner := a.limiter.Handler(h)
	return a.LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			a.deny(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
			return
		}
		inner.ServeHTTP(w, r)
	}))
}

// PairRequest is the body of POST /v1/pair; both fields are optional.
type PairRequest struct {
	// ClientID binds the token to this X-Vellum-Client-Id.
	ClientID string `json:"clientId,omitempty"`
	// DeviceID asks for a refresh token bound to this device.
	DeviceID string `json:"deviceId,omitempty"`
}

// RefreshRequest is the body of POST /v1/pair/refresh.
type RefreshRequest struct {
	RefreshToken string `json:"refreshToken"`
	DeviceID     string `json:"deviceId"`
}

func (a *Authority) decode(w http.ResponseWriter, r *http.Request, v any, required bool) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(v)
	if err == nil || (!required && errors.Is(err, io.EOF)) {
		return true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		a.deny(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "request body exceeds 4 KiB")
		return false
	}
	a.deny(w, r, http.StatusBadRequest, "bad_request", "request body must be a JSON object")
	return false
}

// PairHandler serves POST /v1/pair. Order of checks: local-only
// (403), rate limit per peer (429), X-Vellum-Interface-Id present (400),
// Origin allow-listed when required (403), body (400/413). Success answers
// 200 with Tokens.
func (a *Authority) PairHandler() http.Handler {
	return a.guard(func(w http.ResponseWriter, r *http.Request) {
		iface := strings.TrimSpace(r.Header.Get(wire.HeaderInterfaceID))
		if iface == "" {
			a.deny(w, r, http.StatusBadRequest, "interface_required", wire.HeaderInterfaceID+" header is required")
			return
		}
		if !validID(iface) {
			a.deny(w, r, http.StatusBadRequest, "bad_interface", wire.HeaderInterfaceID+" must be 1–64 characters of [A-Za-z0-9._-]")
			return
		}
		if !a.originOK(w, r, iface) {
			return
		}
		var req PairRequest
		if !a.decode(w, r, &req, false) {
			return
		}
		if (req.ClientID != "" && !validClientID(req.ClientID)) || (req.DeviceID != "" && !validClientID(req.DeviceID)) {
			a.deny(w, r, http.StatusBadRequest, "bad_request", "clientId and deviceId must be at most 256 printable characters")
			return
		}
		toks, err := a.Mint(Grant{InterfaceID: iface, ClientID: req.ClientID, DeviceID: req.DeviceID})
		if err != nil {
			a.log.Error("auth: mint failed", slog.String("module", "auth"), slog.Any("err", err))
			writeError(w, http.StatusInternalServerError, "internal", "could not mint token")
			return
		}
		a.log.Info("auth: client paired", slog.String("module", "auth"), slog.String("interfaceId", iface),
			slog.String("clientId", req.ClientID), slog.Bool("deviceBound", req.DeviceID != ""),
			slog.String("actorPrincipalId", toks.ActorPrincipalID))
		writeJSON(w, toks)
	})
}

// originOK enforces the Origin rule: chrome-extension pairing needs an
// allow-listed origin; any other caller that sends an Origin needs one too.
func (a *Authority) originOK(w http.ResponseWriter, r *http.Request, iface string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" && iface != wire.InterfaceChromeExtension {
		return true
	}
	if a.origins[strings.TrimRight(origin, "/")] {
		return true
	}
	a.deny(w, r, http.StatusForbidden, "origin_not_allowed", "origin is not allowed to pair", slog.String("origin", origin))
	return false
}

// RefreshHandler serves POST /v1/pair/refresh: {"refreshToken","deviceId"} →
// Tokens with a new access token and a new refresh token. Same local-only
// and rate-limit guards as PairHandler. A refresh token is single-use, must
// be unexpired and must be bound to the given deviceId; otherwise 401.
func (a *Authority) RefreshHandler() http.Handler {
	return a.guard(func(w http.ResponseWriter, r *http.Request) {
		if !a.originOK(w, r, r.Header.Get(wire.HeaderInterfaceID)) {
			return
		}
		var req RefreshRequest
		if !a.decode(w, r, &req, true) {
			return
		}
		if req.RefreshToken == "" || req.DeviceID == "" {
			a.deny(w, r, http.StatusBadRequest, "bad_request", "refreshToken and deviceId are required")
			return
		}
		c, err := a.Verify(req.RefreshToken, ScopeRefresh)
		if err != nil {
			a.deny(w, r, http.StatusUnauthorized, tokenCode(err), "refresh token rejected", slog.String("reason", reasonOf(err)))
			return
		}
		if c.DeviceID != req.DeviceID {
			a.deny(w, r, http.StatusUnauthorized, "device_mismatch", "refresh token is bound to another device")
			return
		}
		if !a.spend(c.ID, c.ExpiresAt.Time) {
			a.deny(w, r, http.StatusUnauthorized, "refresh_reused", "refresh token was already used")
			return
		}
		toks, err := a.Mint(Grant{Actor: c.Subject, InterfaceID: c.InterfaceID, ClientID: c.ClientID, DeviceID: c.DeviceID})
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "could not mint token")
			return
		}
		a.log.Info("auth: token refreshed", slog.String("module", "auth"), slog.String("interfaceId", c.InterfaceID),
			slog.String("clientId", c.ClientID), slog.String("actorPrincipalId", c.Subject))
		writeJSON(w, toks)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func tokenCode(err error) string {
	switch {
	case errors.Is(err, ErrTokenExpired):
		return "token_expired"
	case errors.Is(err, ErrTokenWrongKind):
		return "wrong_token_kind"
	}
	return "invalid_token"
}

// reasonOf returns a log-safe reason: the jwt library's error text never
// includes the token itself.
func reasonOf(err error) string { return err.Error() }

// validID reports whether s is a plausible interface id.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// validClientID reports whether s fits the hub's header rules: at
// most 256 bytes, no control characters.
func validClientID(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}
