//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stdio client that goes away in the middle of browser_navigate (its end
// of the pipes closed, as when the client process dies): the server closes
// the session's page, shuts the local Chromium down and exits, leaving no
// process behind.
func TestStdioClientVanishingMidToolLeavesNoProcess(t *testing.T) {
	s := startSite(t)
	mark := newMark(t)
	cmd := diesWithTest(exec.Command(binary, serverArgs(t.TempDir())...))
	cmd.Env = append(os.Environ(), markEnv+"="+mark)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	ctx := procCtx(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vanishing"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	require.NoError(t, err)
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": s.URL + "/slow"}})
		calls <- err
	}()
	<-s.slowHit // Chromium is loading the page: the tool is in flight
	require.NotEmpty(t, marked(t, mark), "the server, driver and Chromium run")

	require.NoError(t, stdin.Close()) // the client is gone
	err = <-exited
	require.NoError(t, err, "the server exits cleanly when its client goes away")
	exited <- err
	assert.Empty(t, marked(t, mark), "no server, driver or Chromium process is left")
	cancel()
	<-calls
	_ = cs.Close()
}
