package natshub

import (
	"testing"
	"time"
)

// SetWaitsForTest sets how long a holder keeps a delivery answer and how
// long a publish waits for one, for the rest of t; call it before the
// test starts any hub. A test that sets both far beyond its own run shows
// that a path ends without either.
func SetWaitsForTest(t testing.TB, answer, publish time.Duration) {
	oldAnswer, oldPublish := ackDelay, staleWait
	ackDelay, staleWait = answer, publish
	t.Cleanup(func() { ackDelay, staleWait = oldAnswer, oldPublish })
}
