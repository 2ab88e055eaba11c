package hostproxytest_test

import (
	"net/http"
	"testing"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

func TestNewServer_UnknownTokenIs401AndWrapSeesAuthenticatedRequests(t *testing.T) {
	var actors []string
	srv := hostproxytest.NewServer(t, hostproxytest.ServerOptions{
		Tokens: map[string]string{"tok": "alice"},
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a, _ := eventhub.ActorFrom(r.Context())
				actors = append(actors, a)
				next.ServeHTTP(w, r)
			})
		},
	})
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+wire.PathHostBrowserResult, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post("nope"))
	assert.Equal(t, http.StatusBadRequest, post("tok"), "reaches the result route: empty body")
	assert.Equal(t, http.StatusBadRequest, post(""))
	assert.Equal(t, []string{"alice", ""}, actors)
	hostproxytest.WaitClient(t, srv.Hub, "nobody", false)
}
