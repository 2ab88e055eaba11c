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
