package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A full record of spent refresh tokens refuses a new one rather than forget
// a live entry, which would make that refresh token usable again.
func TestSpendRefusesWhenTheRecordIsFullOfLiveTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := New(Config{Key: make([]byte, MinKeyLen), Now: func() time.Time { return now }})
	require.NoError(t, err)
	for i := range maxSpent {
		require.True(t, a.spend(fmt.Sprint("id-", i), now.Add(time.Hour)))
	}
	assert.False(t, a.spend("one-more", now.Add(time.Hour)), "full of live entries: refused")
	assert.False(t, a.spend("id-0", now.Add(time.Hour)), "every recorded id stays spent")

	now = now.Add(2 * time.Hour) // every entry expired: room again
	assert.True(t, a.spend("one-more", now.Add(time.Hour)))
}
