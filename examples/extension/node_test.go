package extension_test

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestJavaScriptUnitTests runs the extension's Node unit tests
// (test/*.test.mjs, node --test). Skipped when node is not installed.
func TestJavaScriptUnitTests(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "test/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}
