package ratelimit_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy/ratelimit"
)

// limited returns a handler behind the limiter and a request maker. The
// actor, when non-empty, is put in the context the way an auth middleware
// would, before the limiter runs.
func limited(l *ratelimit.Limiter) func(method, path, remote, actor string, hdr ...string) int {
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	return func(method, path, remote, actor string, hdr ...string) int {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		if actor != "" {
			r = r.WithContext(eventhub.WithActor(r.Context(), actor))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
}

// admitted sends up to max requests and counts the 200s before the first 429.
func admitted(do func() int, max int) int {
	for i := range max {
		if do() != http.StatusOK {
			return i
		}
	}
	return max
}

func TestRateLimitBudgetsLoopbackRemoteUnauthenticated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		do := limited(ratelimit.New(ratelimit.Config{Logger: bbt.DiscardLogger()}))
		get := func(remote, actor string, hdr ...string) func() int {
			return func() int { return do(http.MethodGet, "/v1/conversations", remote, actor, hdr...) }
		}
		assert.Equal(t, 1200, admitted(get("127.0.0.1:40000", "alice"), 2000), "authenticated loopback")
		assert.Equal(t, 0, admitted(get("[::1]:40000", "alice"), 2000), "IPv6 loopback is the same machine")
		assert.Equal(t, 300, admitted(get("203.0.113.7:1234", "alice"), 2000), "authenticated remote")
		assert.Equal(t, 20, admitted(get("203.0.113.8:1234", ""), 2000), "unauthenticated")
		assert.Equal(t, 20, admitted(get("127.0.0.2:9", ""), 2000), "unauthenticated loopback gets the unauthenticated budget")
		// Forwarding headers are never trusted: a remote peer claiming
		// loopback stays remote.
		assert.Equal(t, 300, admitted(get("198.51.100.9:1", "alice", "X-Forwarded-For", "127.0.0.1", "X-Real-IP", "127.0.0.1"), 2000))
		// Budgets are per IP: another remote IP has its own.
		assert.Equal(t, 300, admitted(get("203.0.113.99:1", "bob"), 2000))
		// The sliding window: 90 s later the previous window weighs 50 %,
		// so half of the unauthenticated budget is back.
		time.Sleep(90 * time.Second)
		assert.Equal(t, 10, admitted(get("203.0.113.8:1234", ""), 2000))
	})
}

func TestRateLimitExemptsEventsStreamAndHealthProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		do := limited(ratelimit.New(ratelimit.Config{Logger: bbt.DiscardLogger()}))
		for _, p := range []string{"/v1/events", "/healthz", "/readyz", "/health", "/v1/health/"} {
			for range 50 {
				require.Equal(t, http.StatusOK, do(http.MethodGet, p, "203.0.113.8:1", ""), p)
			}
		}
		// Exempt requests do not consume the budget either.
		assert.Equal(t, 20, admitted(func() int { return do(http.MethodGet, "/v1/messages", "203.0.113.8:1", "") }, 100))
		assert.Equal(t, http.StatusTooManyRequests, do(http.MethodGet, "/v1/eventsX", "203.0.113.8:1", ""), "only the exact segment is exempt")
	})
}

func TestRateLimit429LogsStructuredWarningWithBreakdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := bbt.NewLogRecorder()
		l := ratelimit.New(ratelimit.Config{UnauthenticatedLimit: 5, Logger: logger})
		h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		send := func(path string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = "203.0.113.8:1"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		for range 3 {
			send("/v1/conversations")
		}
		send("/v1/messages")
		send("/v1/messages")
		w := send("/v1/conversations/42")
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		assert.NotEmpty(t, w.Header().Get("Retry-After"))
		assert.Equal(t, "5", w.Header().Get("X-RateLimit-Limit"))

		recs := logs.Find("rate limit exceeded")
		require.Len(t, recs, 1)
		rec := recs[0]
		assert.Equal(t, slog.LevelWarn, rec.Level)
		assert.Equal(t, "rate-limiter", rec.Attrs["module"])
		assert.Equal(t, "GET /v1/conversations/42", rec.Attrs["endpoint"])
		assert.Equal(t, "unauthenticated", rec.Attrs["class"])
		assert.EqualValues(t, 5, rec.Attrs["limit"])
		assert.Equal(t, []ratelimit.EndpointCount{
			{Endpoint: "GET /v1/conversations", Count: 3},
			{Endpoint: "GET /v1/messages", Count: 2},
		}, rec.Attrs["consumedBy"])
	})
}

func TestRateLimitAuthenticatedBudgetChangesAtRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ratelimit.New(ratelimit.Config{AuthenticatedLimit: 5, Logger: bbt.DiscardLogger()})
		do := limited(l)
		get := func() int { return do(http.MethodGet, "/v1/x", "203.0.113.7:1", "alice") }
		assert.Equal(t, 5, admitted(get, 100))
		l.SetAuthenticatedLimit(12)
		assert.Equal(t, 12, l.AuthenticatedLimit())
		assert.Equal(t, 7, admitted(get, 100), "the raised budget applies to the next request")
		l.SetAuthenticatedLimit(0)
		assert.Equal(t, ratelimit.DefaultAuthenticatedLimit, l.AuthenticatedLimit(), "≤ 0 restores the default")
		// The loopback budget is not affected.
		assert.Equal(t, 1200, admitted(func() int { return do(http.MethodGet, "/v1/x", "127.0.0.1:1", "alice") }, 2000))
	})
}

func TestRateLimitAuthenticatedHookClassifiesBeforeAuth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ratelimit.New(ratelimit.Config{
			Logger:        bbt.DiscardLogger(),
			Authenticated: func(r *http.Request) bool { return r.Header.Get("Authorization") != "" },
		})
		do := limited(l)
		assert.Equal(t, 300, admitted(func() int {
			return do(http.MethodGet, "/v1/x", "203.0.113.7:1", "", "Authorization", "Bearer t")
		}, 1000))
		assert.Equal(t, 20, admitted(func() int { return do(http.MethodGet, "/v1/x", "203.0.113.7:1", "alice") }, 1000),
			"the hook, not the context actor, decides")
	})
}

// Every loopback address is this machine: a local process must not get a
// fresh budget per source address (127.0.0.2, 127.1.2.3, ::1, …).
func TestRateLimitLoopbackAddressesShareOneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		do := limited(ratelimit.New(ratelimit.Config{Logger: bbt.DiscardLogger()}))
		get := func(remote, actor string) func() int {
			return func() int { return do(http.MethodGet, "/v1/conversations", remote, actor) }
		}
		assert.Equal(t, 1200, admitted(get("127.0.0.1:40000", "alice"), 2000))
		for _, remote := range []string{"127.0.0.2:1", "127.1.2.3:1", "[::1]:1", "[::ffff:127.0.0.9]:1"} {
			assert.Equal(t, 0, admitted(get(remote, "alice"), 10), remote)
		}
		assert.Equal(t, 20, admitted(get("127.0.0.5:1", ""), 100), "unauthenticated")
		assert.Equal(t, 0, admitted(get("127.0.0.6:1", ""), 10), "unauthenticated, another loopback address")
	})
}
