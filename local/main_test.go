//go:build linux

// The real-browser tests of this package read the Linux process table
// (/proc) and use pidfds to prove that no process outlives the backend
// (LOC-3), so they build on Linux only.

package local

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// Re-executed by TestHostKilledLeavesNoProcess: be a host process
		// that launches a browser and then gets SIGKILLed.
		runHostHelper()
		return
	}
	goleak.VerifyTestMain(m)
}
