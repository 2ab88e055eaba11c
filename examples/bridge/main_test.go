package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-help"}, &out)
	require.True(t, errors.Is(err, flag.ErrHelp), "%v", err)
	for _, f := range []string{"-server", "-token", "-interface", "-client-id", "-devtools", "-user-data-dir", "-ws-url", "-probe-timeout", "-min-backoff", "-max-backoff", "-conversation-tabs"} {
		assert.Regexp(t, "  "+f+"[ \n]", out.String(), "flag %s", f) // a bool flag has no type after it
	}
}

func TestBadFlagsAreRejected(t *testing.T) {
	var out bytes.Buffer
	assert.ErrorContains(t, run([]string{"-devtools", "nope"}, &out), "-devtools")
	assert.ErrorContains(t, run([]string{"-devtools", "localhost:0"}, &out), "port")
	assert.ErrorContains(t, run([]string{"-server", "ftp://x"}, &out), "ServerURL")
	assert.ErrorContains(t, run([]string{"extra"}, &out), "unexpected arguments")
}

// A non-loopback DevTools address is refused at start-up, before anything
// is dialled, with the reason (issue 10 item 6).
func TestNonLoopbackDevToolsIsRefusedAtStartup(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{
		{"-devtools", "8.8.8.8:9222"},
		{"-devtools", "example.com:9222"},
		{"-devtools", "localhost:9222", "-ws-url", "ws://10.0.0.2:9222/devtools/browser/x"},
	} {
		err := run(args, &out)
		require.Error(t, err, "%v", args)
		assert.ErrorIs(t, err, browserbackend.ErrNonLoopback, "%v", args)
		assert.ErrorContains(t, err, "is not a loopback address", "%v", args)
		assert.ErrorContains(t, err, "use localhost or 127.0.0.1", "%v", args)
	}
}
