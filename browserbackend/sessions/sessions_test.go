package sessions_test

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/sessions"
)

// childEnv makes the test binary act as a process that writes a creating
// row and then waits to be killed.
const childEnv = "BROWSERCHAIN_SESSIONS_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		st, err := sessions.Open(path, sessions.Options{})
		if err != nil {
			os.Exit(2)
		}
		id, err := st.Begin(context.Background(), sessions.Begin{Backend: browserbackend.KindLocal, ConversationID: "conv-orphan", TimeoutMinutes: 5})
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(id + "\n")
		select {} // killed here, before the backend session exists
	}
	goleak.VerifyTestMain(m)
}

// clock is an injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }
func dbPath(t *testing.T) string     { return filepath.Join(t.TempDir(), "sessions.db") }
func open(t *testing.T, path string, c *clock) *sessions.Store {
	st, err := sessions.Open(path, sessions.Options{Now: c.Now})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func TestOpenToCloseRecordsTheMinutes(t *testing.T) {
	c := newClock()
	st := open(t, dbPath(t), c)
	ctx := t.Context()
	id, err := st.Begin(ctx, sessions.Begin{Backend: browserbackend.KindExtension, ConversationID: "conv-1", ActorPrincipalID: "user-7", TimeoutMinutes: 20})
	require.NoError(t, err)
	rec, err := st.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, sessions.StateCreating, rec.State)
	c.Add(2 * time.Second)
	require.NoError(t, st.Activate(ctx, id))
	c.Add(7*time.Minute + 28*time.Second)
	rec, err = st.End(ctx, id, sessions.ClosedByAgent)
	require.NoError(t, err)
	assert.Equal(t, sessions.StateClosed, rec.State)
	assert.Equal(t, sessions.ClosedByAgent, rec.ClosedBy)
	assert.Equal(t, browserbackend.KindExtension, rec.Backend)
	assert.Equal(t, "conv-1", rec.ConversationID)
	assert.Equal(t, "user-7", rec.ActorPrincipalID)
	assert.Equal(t, 20, rec.TimeoutMinutes)
	assert.InDelta(t, 7.5, rec.Minutes, 1e-9)
	assert.Equal(t, c.Now(), rec.ClosedAt)
	_, err = st.End(ctx, id, sessions.ClosedByClose)
	assert.ErrorIs(t, err, guard.ErrValidationFailed, "closed once")
	_, err = st.Get(ctx, "bs_nope")
	assert.ErrorIs(t, err, sessions.ErrNotFound)
}

func TestFailedCreationAndSweep(t *testing.T) {
	c := newClock()
	st := open(t, dbPath(t), c)
	ctx := t.Context()
	failed, _ := st.Begin(ctx, sessions.Begin{Backend: browserbackend.KindLocal, ConversationID: "a"})
	require.NoError(t, st.Fail(ctx, failed, "launch failed"))
	active, _ := st.Begin(ctx, sessions.Begin{Backend: browserbackend.KindLocal, ConversationID: "b"})
	require.NoError(t, st.Activate(ctx, active))
	stuck, _ := st.Begin(ctx, sessions.Begin{Backend: browserbackend.KindLocal, ConversationID: "c"})
	long, _ := st.Begin(ctx, sessions.Begin{Backend: browserbackend.KindLocal, ConversationID: "d", TimeoutMinutes: 60})
	require.NoError(t, st.Activate(ctx, long))

	c.Add(14 * time.Minute)
	n, err := st.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is due before the default 15 minutes")
	c.Add(time.Minute)
	n, err = st.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	for id, want := range map[string]sessions.State{failed: sessions.StateError, active: sessions.StateClosed, stuck: sessions.StateError, long: sessions.StateActive} {
		rec, err := st.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, rec.State, rec.ConversationID)
	}
	rec, _ := st.Get(ctx, active)
	assert.Equal(t, sessions.ClosedBySweep, rec.ClosedBy)
	assert.InDelta(t, 15, rec.Minutes, 1e-9)
}

func TestTimeoutMinutesBounds(t *testing.T) {
	st := open(t, dbPath(t), newClock())
	for _, m := range []int{-1, 361, 1000} {
		_, err := st.Begin(t.Context(), sessions.Begin{ConversationID: "x", TimeoutMinutes: m})
		require.ErrorIs(t, err, &guard.Error{Code: guard.CodeValidationFailed, Param: "timeout_minutes"}, m)
	}
	for m, want := range map[int]int{0: 15, 1: 1, 360: 360} {
		got, err := sessions.CheckTimeout(m)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// TestKilledBetweenCreatingAndTheBackendSessionIsSweptAsError: a child
// process writes the creating row and is killed (SIGKILL) before it could
// create the backend session; after the timeout the sweep marks it error.
func TestKilledBetweenCreatingAndTheBackendSessionIsSweptAsError(t *testing.T) {
	path := dbPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child wrote its row")
	id := strings.TrimSpace(line)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	c := &clock{t: time.Now().Add(4 * time.Minute)}
	st := open(t, path, c)
	rec, err := st.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, sessions.StateCreating, rec.State, "the orphan is still creating")
	n, err := st.Sweep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, n, "not before its 5 minutes")
	c.Add(2 * time.Minute)
	n, err = st.Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	rec, err = st.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, sessions.StateError, rec.State)
	assert.Equal(t, sessions.ClosedBySweep, rec.ClosedBy)
	assert.NotEmpty(t, rec.Error)
}

func TestHostSuppliedDatabase(t *testing.T) {
	db, err := sql.Open("sqlite", dbPath(t))
	require.NoError(t, err)
	defer db.Close()
	st, err := sessions.New(db, sessions.Options{})
	require.NoError(t, err)
	id, err := st.Begin(t.Context(), sessions.Begin{Backend: browserbackend.KindCDPInspect, ConversationID: "x"})
	require.NoError(t, err)
	require.NoError(t, st.Activate(t.Context(), id))
	require.NoError(t, st.Close(), "does not close the host's handle")
	require.NoError(t, db.Ping())
}
