package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-help"}, &out)
	require.True(t, errors.Is(err, flag.ErrHelp), "%v", err)
	for _, f := range []string{"-server", "-token", "-interface", "-client-id", "-devtools", "-user-data-dir", "-ws-url", "-probe-timeout", "-min-backoff", "-max-backoff"} {
		assert.Contains(t, out.String(), "  "+f+" ", "flag %s", f)
	}
}

func TestBadFlagsAreRejected(t *testing.T) {
	var out bytes.Buffer
	assert.ErrorContains(t, run([]string{"-devtools", "nope"}, &out), "-devtools")
	assert.ErrorContains(t, run([]string{"-devtools", "localhost:0"}, &out), "port")
	assert.ErrorContains(t, run([]string{"-server", "ftp://x"}, &out), "ServerURL")
	assert.ErrorContains(t, run([]string{"extra"}, &out), "unexpected arguments")
}
