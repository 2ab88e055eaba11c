//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/internal/proctest"
)

// conformanceVersion is the MCP conformance suite scripts/setup.sh
// installs, with the Node 22 it runs on.
const conformanceVersion = "0.1.16"

// conformance returns the node binary and the suite's entry point:
// $BROWSERCHAIN_MCP_CONFORMANCE (the suite's directory, holding node and
// node_modules), else where scripts/setup.sh installs them.
func conformance(t *testing.T) (node, suite string) {
	dir := os.Getenv("BROWSERCHAIN_MCP_CONFORMANCE")
	if dir == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		dir = filepath.Join(home, ".cache", "browserchain", "mcp-conformance", conformanceVersion)
	}
	node = filepath.Join(dir, "node")
	suite = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		_, err := os.Stat(p)
		require.NoError(t, err, "the MCP conformance suite is missing: run scripts/setup.sh")
	}
	return node, suite
}

// The official MCP conformance suite, every server scenario of its active
// suite, against the server over streamable HTTP: the scenarios that apply
// to a server without the suite's own test tools pass with no failure and
// no warning, and the others are exactly those of
// testdata/conformance-expected-failures.yml. No scenario calls a browser
// tool, so no browser starts.
func TestMCPConformanceSuite(t *testing.T) {
	node, suite := conformance(t)
	dir := t.TempDir()
	cmd := diesWithTest(exec.Command(binary, append(serverArgs(dir), "-http", "127.0.0.1:0")...))
	url, _ := proctest.StartServing(t, procCtx(t), cmd, nil, listening)

	run := diesWithTest(exec.CommandContext(procCtx(t), node, suite, "server", "--url", url,
		"--expected-failures", filepath.Join("testdata", "conformance-expected-failures.yml"),
		"--output-dir", filepath.Join(dir, "results")))
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	err := run.Run()
	require.NoError(t, err, "conformance suite:\n%s", out.String())
	assert.Contains(t, out.String(), "Baseline check passed")
}
