package runtime_test

import (
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

// The shared guard flags: absent means no policy; a list with
// -allow-writes is that policy; an explicitly empty list is a policy that
// guard.New refuses; StartGuard builds the guard and the egress proxy.
func TestGuardFlags(t *testing.T) {
	parse := func(args ...string) *guard.Policy {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		gf := runtime.AddGuardFlags(fs)
		require.NoError(t, fs.Parse(args))
		return gf.Policy()
	}
	assert.Nil(t, parse(), "no flag: no policy")
	assert.Nil(t, parse("-allow-writes"), "-allow-writes alone sets no policy")
	pol := parse("-allowed-domains", " app.example.com, *.example.com ,", "-allow-writes")
	require.NotNil(t, pol)
	assert.Equal(t, []string{"app.example.com", "*.example.com"}, pol.AllowedDomains)
	assert.True(t, pol.AllowWrites)

	empty := parse("-allowed-domains=")
	require.NotNil(t, empty)
	assert.Empty(t, empty.AllowedDomains)
	_, _, _, err := runtime.StartGuard(empty, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, guard.ErrValidationFailed)

	g, args, stop, err := runtime.StartGuard(pol, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer stop()
	require.NotNil(t, g)
	assert.NotEmpty(t, args, "the local Chromium's proxy flags")
	require.ErrorIs(t, g.CheckURL(t.Context(), "https://elsewhere.test/"), guard.ErrForbidden)

	g, args, stop, err = runtime.StartGuard(nil, nil)
	require.NoError(t, err)
	stop()
	assert.Nil(t, g)
	assert.Nil(t, args)
}
