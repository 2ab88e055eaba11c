//go:build linux

// The matrix kills and stops real processes found through /proc, so it
// builds on Linux only.

package faulttest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
