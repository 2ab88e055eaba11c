package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/httprate"
	"github.com/golang-jwt/jwt/v5"
)

// Scope profiles of the tokens; the headers and interface ids are in
// package wire.
const (
	// ScopeActorClient is the scope profile of an access token: a client
	// acting for one actor (the seed's actor_client_v1).
	ScopeActorClient = "actor_client_v1"
	// ScopeRefresh is the scope profile of a refresh token; the middleware
	// refuses it as an access token.
	ScopeRefresh = "pair_refresh_v1"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultIssuer     = "browserchain"
	DefaultAudience   = "browserchain-runtime"
	DefaultActor      = "local-user"
	DefaultTokenTTL   = 24 * time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
	DefaultPairLimit  = 10
	DefaultPairWindow = 60 * time.Second
	// MinKeyLen is the shortest HS256 key New accepts, in bytes.
	MinKeyLen = 32
	// maxBody caps pairing request bodies.
	maxBody = 4 << 10
	// maxSpent bounds the memory of used refresh tokens.
	maxSpent = 10000
	// maxBound bounds the token → client bindings; expired ones
	// are dropped first.
	maxBound = 20000
)

// Config configures an Authority. The zero value of every field except Key
// takes the default named on the field.
type Config struct {
	// Key is the HS256 signing key, at least MinKeyLen bytes. Required. The
	// Authority keeps a copy; it is never logged.
	Key []byte
	// Issuer and Audience are written into every token and checked on
	// verification. Defaults DefaultIssuer, DefaultAudience.
	Issuer   string
	Audience string
	// ActorPrincipalID is the actor a paired client acts for. A self-hosted
	// runtime has one user; default DefaultActor ("local-user").
	ActorPrincipalID string
	// AllowedOrigins lists the exact origins that may pair, e.g.
	// "chrome-extension://abcdefghijklmnopabcdefghijklmnop". A chrome-extension
	// pairing must carry one of them; any other request that carries an Origin
	// header must too (a web page must never pair). Empty: no origin is
	// allowed, so chrome-extension pairing is refused.
	AllowedOrigins []string
	// TokenTTL is the access-token lifetime; default 24 h.
	TokenTTL time.Duration
	// RefreshTTL is the refresh-token lifetime; default 30 days.
	RefreshTTL time.Duration
	// PairLimit requests per PairWindow per peer address are allowed on the
	// pairing routes; defaults 10 per 60 s. Every loopback address is one
	// peer (this machine), so the pairing routes, which are local-only,
	// share one budget. Beyond it: 429 with Retry-After and
	// X-RateLimit-* headers.
	PairLimit  int
	PairWindow time.Duration
	// Now is the clock used for issuing and verifying tokens; default
	// time.Now. The rate limiter keeps its own wall clock.
	Now func() time.Time
	// Logger receives the audit lines (warn, one per denial); nil means
	// slog.Default().
	Logger *slog.Logger
}

// Claims are the claims of an access or refresh token. The subject is the
// actor principal id.
type Claims struct {
	// Scope is ScopeActorClient or ScopeRefresh.
	Scope string `json:"scope"`
	// InterfaceID is the interface the client paired as ("chrome-extension",
	// "macos", …).
	InterfaceID string `json:"iface,omitempty"`
	// ClientID, when set, binds the token to one X-Vellum-Client-Id.
	ClientID string `json:"cid,omitempty"`
	// DeviceID, when set, binds the token to one device (refresh tokens
	// always carry it).
	DeviceID string `json:"did,omitempty"`
	jwt.RegisteredClaims
}

// Actor returns the actor principal id (the subject).
func (c *Claims) Actor() string { return c.Subject }

// Grant describes a token to mint.
type Grant struct {
	// Actor is the subject; empty means Config.ActorPrincipalID.
	Actor       string
	InterfaceID string
	ClientID    string
	// DeviceID, when set, makes Mint also return a refresh token bound to it.
	DeviceID string
}

// Tokens is what Mint returns and /v1/pair answers.
type Tokens struct {
	Token            string    `json:"token"`
	ExpiresAt        time.Time `json:"expiresAt"`
	ActorPrincipalID string    `json:"actorPrincipalId"`
	RefreshToken     string    `json:"refreshToken,omitempty"`
}

// Authority mints and verifies tokens and serves the pairing routes. It is
// safe for concurrent use.
type Authority struct {
	key      []byte
	issuer   string
	audience string
	actor    string
	origins  map[string]bool
	ttl      time.Duration
	rttl     time.Duration
	now      func() time.Time
	log      *slog.Logger
	limiter  *httprate.RateLimiter
	parser   *jwt.Parser

	mu    sync.Mutex
	spent map[string]time.Time // used refresh-token ids → their expiry
	// bound maps an access token's id to the client id it was last seen
	// with: the real extension names its client only on the events
	// stream and the result route, not on the event routes.
	bound map[string]binding
}

// binding is the client id a token was used with, until the token expires.
type binding struct {
	clientID string
	exp      time.Time
}

// New returns an Authority, or an error when the key is missing or shorter
// than MinKeyLen or an allowed origin is not a chrome-extension:// origin.
func New(cfg Config) (*Authority, error) {
	if len(cfg.Key) < MinKeyLen {
		return nil, fmt.Errorf("auth: signing key must be at least %d bytes, got %d", MinKeyLen, len(cfg.Key))
	}
	a := &Authority{
		key:      append([]byte(nil), cfg.Key...),
		issuer:   or(cfg.Issuer, DefaultIssuer),
		audience: or(cfg.Audience, DefaultAudience),
		actor:    or(cfg.ActorPrincipalID, DefaultActor),
		origins:  make(map[string]bool),
		ttl:      cfg.TokenTTL,
		rttl:     cfg.RefreshTTL,
		now:      cfg.Now,
		log:      cfg.Logger,
		spent:    make(map[string]time.Time),
		bound:    make(map[string]binding),
	}
	for _, o := range cfg.AllowedOrigins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if !strings.HasPrefix(o, "chrome-extension://") || len(o) == len("chrome-extension://") {
			return nil, fmt.Errorf("auth: allowed origin %q is not a chrome-extension://<id> origin", o)
		}
		a.origins[o] = true
	}
	if a.ttl <= 0 {
		a.ttl = DefaultTokenTTL
	}
	if a.rttl <= 0 {
		a.rttl = DefaultRefreshTTL
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	limit, window := cfg.PairLimit, cfg.PairWindow
	if limit <= 0 {
		limit = DefaultPairLimit
	}
	if window <= 0 {
		window = DefaultPairWindow
	}
	a.limiter = httprate.NewRateLimiter(limit, window,
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return "pair:" + peerKey(r), nil }),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			a.deny(w, r, http.StatusTooManyRequests, "rate_limited", "too many pairing requests; retry later")
		}),
	)
	a.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(a.issuer),
		jwt.WithAudience(a.audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return a.now() }),
	)
	return a, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ActorPrincipalID returns the actor paired clients act for.
func (a *Authority) ActorPrincipalID() string { return a.actor }

// Mint signs an access token for g (and a refresh token when g.DeviceID is
// set). The pairing handler uses it; tests and CLIs may too.
func (a *Authority) Mint(g Grant) (Tokens, error) {
	actor := or(g.Actor, a.actor)
	now := a.now()
	exp := now.Add(a.ttl)
	tok, err := a.sign(Claims{
		Scope:            ScopeActorClient,
		InterfaceID:      g.InterfaceID,
		ClientID:         g.ClientID,
		DeviceID:         g.DeviceID,
		RegisteredClaims: a.registered(actor, now, exp),
	})
	if err != nil {
		return Tokens{}, err
	}
	out := Tokens{Token: tok, ExpiresAt: exp, ActorPrincipalID: actor}
	if g.DeviceID != "" {
		out.RefreshToken, err = a.sign(Claims{
			Scope:            ScopeRefresh,
			InterfaceID:      g.InterfaceID,
			ClientID:         g.ClientID,
			DeviceID:         g.DeviceID,
			RegisteredClaims: a.registered(actor, now, now.Add(a.rttl)),
		})
		if err != nil {
			return Tokens{}, err
		}
	}
	return out, nil
}

func (a *Authority) registered(actor string, now, exp time.Time) jwt.RegisteredClaims {
	var id [16]byte
	_, _ = rand.Read(id[:])
	return jwt.RegisteredClaims{
		Issuer:    a.issuer,
		Subject:   actor,
		Audience:  jwt.ClaimStrings{a.audience},
		ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(now),
		ID:        hex.EncodeToString(id[:]),
	}
}

func (a *Authority) sign(c Claims) (string, error) {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return s, nil
}

// Errors returned by Verify; match with errors.Is.
var (
	ErrTokenExpired   = errors.New("auth: token expired")
	ErrTokenInvalid   = errors.New("auth: token invalid")
	ErrTokenWrongKind = errors.New("auth: wrong token kind")
)

// Verify checks a token's signature, algorithm, issuer, audience and expiry
// and that its scope is scope. It returns the claims, or an error matching
// ErrTokenExpired, ErrTokenWrongKind or ErrTokenInvalid.
func (a *Authority) Verify(token, scope string) (*Claims, error) {
	var c Claims
	_, err := a.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return a.key, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, ErrTokenExpired
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	case c.Subject == "":
		return nil, fmt.Errorf("%w: no subject", ErrTokenInvalid)
	case c.Scope != scope:
		return nil, ErrTokenWrongKind
	}
	return &c, nil
}

// spend marks a refresh token id as used; false when it already was, or when
// the record of spent ids is full of unexpired ones (maxSpent).
func (a *Authority) spend(id string, exp time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.spent[id]; ok {
		return false
	}
	if len(a.spent) >= maxSpent {
		now := a.now()
		for k, e := range a.spent {
			if e.Before(now) {
				delete(a.spent, k)
			}
		}
	}
	if len(a.spent) >= maxSpent {
		// Still full of live entries. Forgetting one would let that refresh
		// token be used again, so refuse: the client pairs anew.
		return false
	}
	a.spent[id] = exp
	return true
}

// clientOf returns the client id a request authenticated by c acts as:
// the id the token is bound to at pairing; else the
// X-Vellum-Client-Id header, which (re)binds the token to it; else the id
// the token was last used with. "" when none is known.
func (a *Authority) clientOf(c *Claims, header string) string {
	if c.ClientID != "" {
		return c.ClientID
	}
	if c.ID == "" {
		return header
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if header != "" {
		if b, ok := a.bound[c.ID]; !ok || b.clientID != header {
			a.pruneBound()
		}
		var exp time.Time
		if c.ExpiresAt != nil {
			exp = c.ExpiresAt.Time
		}
		a.bound[c.ID] = binding{clientID: header, exp: exp}
		return header
	}
	return a.bound[c.ID].clientID
}

// pruneBound makes room for one binding; a.mu is held.
func (a *Authority) pruneBound() {
	if len(a.bound) < maxBound {
		return
	}
	now := a.now()
	for k, b := range a.bound {
		if b.exp.Before(now) {
			delete(a.bound, k)
		}
	}
	for k := range a.bound { // still full of live tokens: forget one
		if len(a.bound) < maxBound {
			break
		}
		delete(a.bound, k)
	}
}
