// Package sessions keeps the records of managed browser sessions,
// two-phase and orphan-safe. A "creating" row is written before the backend
// session exists and promoted to "active" when it does, or marked "error";
// a session is closed by close, by the agent, or by the sweep once its
// timeout_minutes have passed, and the sweep retires "creating" rows that
// outlived their timeout (the process died mid-create) as "error".
//
// The default store is an embedded SQLite file (modernc.org/sqlite, pure Go,
// no cgo); a host application can pass its own database/sql handle to New
// (the statements use "?" placeholders and standard SQL types).
//
//	st, err := sessions.Open(filepath.Join(dir, "sessions.db"), sessions.Options{})
//	id, err := st.Begin(ctx, sessions.Begin{Backend: "local", ConversationID: "c1", ActorPrincipalID: "u7"})
//	… start the backend session …
//	err = st.Activate(ctx, id)            // or st.Fail(ctx, id, "launch failed")
//	rec, err := st.End(ctx, id, sessions.ClosedByClose)
package sessions

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Timeout bounds of a session, in minutes.
const (
	DefaultTimeoutMinutes = 15
	MinTimeoutMinutes     = 1
	MaxTimeoutMinutes     = 360
)

// State is a record's state.
type State string

// The states of a record.
const (
	StateCreating State = "creating"
	StateActive   State = "active"
	StateError    State = "error"
	StateClosed   State = "closed"
)

// ClosedBy says what closed a session.
type ClosedBy string

// The ways a session closes.
const (
	ClosedByClose ClosedBy = "close"
	ClosedByAgent ClosedBy = "agent"
	ClosedBySweep ClosedBy = "sweep"
)

// Record is one session. Times are UTC with millisecond precision; zero
// when the event has not happened. Minutes is the time from CreatedAt to
// ClosedAt (0 until closed).
type Record struct {
	ID               string              `json:"id"`
	State            State               `json:"state"`
	Backend          browserbackend.Kind `json:"backend"`
	ConversationID   string              `json:"conversation_id"`
	ActorPrincipalID string              `json:"actor_principal_id,omitempty"`
	TimeoutMinutes   int                 `json:"timeout_minutes"`
	CreatedAt        time.Time           `json:"created_at"`
	ActivatedAt      time.Time           `json:"activated_at,omitzero"`
	ClosedAt         time.Time           `json:"closed_at,omitzero"`
	ClosedBy         ClosedBy            `json:"closed_by,omitempty"`
	Minutes          float64             `json:"minutes,omitempty"`
	Error            string              `json:"error,omitempty"`
}

// Begin is what a new record holds. TimeoutMinutes 0 means
// DefaultTimeoutMinutes; otherwise it must be 1–360.
type Begin struct {
	Backend          browserbackend.Kind
	ConversationID   string
	ActorPrincipalID string
	TimeoutMinutes   int
}

// Options configures a Store. The zero value works.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Key, when set (16, 24 or 32 bytes), seals every saved login's
	// cookies and storage with AES-GCM; without it they are stored as
	// they are, protected only by the file's mode (0600).
	Key []byte
}

// Store keeps the records in a database/sql database. It is safe for
// concurrent use; Close closes the database only when Open opened it.
type Store struct {
	db   *sql.DB
	own  bool
	now  func() time.Time
	aead cipher.AEAD // nil: saved logins unsealed
}

const schema = `CREATE TABLE IF NOT EXISTS browser_sessions (
	id TEXT PRIMARY KEY,
	state TEXT NOT NULL,
	backend TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	actor_principal_id TEXT NOT NULL,
	timeout_minutes INTEGER NOT NULL,
	created_at_ms INTEGER NOT NULL,
	activated_at_ms INTEGER NOT NULL DEFAULT 0,
	closed_at_ms INTEGER NOT NULL DEFAULT 0,
	closed_by TEXT NOT NULL DEFAULT '',
	error TEXT NOT NULL DEFAULT ''
)`

// Open opens (creating when missing, mode 0600) the SQLite file at path
// and its tables. A failure is provider_error.
func Open(path string, opts Options) (*Store, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, storeErr("cannot open the database", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, storeErr("cannot restrict the database's mode", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, storeErr("cannot open the database", err)
	}
	s, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// New uses a database the host application opened (and keeps closing); it
// creates the tables when missing. A Key of the wrong size is
// validation_failed.
func New(db *sql.DB, opts Options) (*Store, error) {
	s := &Store{db: db, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if len(opts.Key) > 0 {
		aead, err := newAEAD(opts.Key)
		if err != nil {
			return nil, err
		}
		s.aead = aead
	}
	for _, q := range []string{schema, contextSchema} {
		if _, err := db.Exec(q); err != nil {
			return nil, storeErr("cannot create the tables", err)
		}
	}
	return s, nil
}

// Close closes the database when Open opened it.
func (s *Store) Close() error {
	if s.own {
		return s.db.Close()
	}
	return nil
}

func storeErr(msg string, err error) error {
	return &guard.Error{Code: guard.CodeProviderError, Param: "session_store", Message: "sessions: " + msg, Err: err}
}

// ErrNotFound is returned for an unknown id (validation_failed, param id).
var ErrNotFound = &guard.Error{Code: guard.CodeValidationFailed, Param: "id", Message: "sessions: no such session"}

// CheckTimeout validates timeout_minutes: 0 means the default, else
// 1–360; anything else is validation_failed naming timeout_minutes.
func CheckTimeout(m int) (int, error) {
	if m == 0 {
		return DefaultTimeoutMinutes, nil
	}
	if m < MinTimeoutMinutes || m > MaxTimeoutMinutes {
		return 0, &guard.Error{Code: guard.CodeValidationFailed, Param: "timeout_minutes",
			Message: "sessions: timeout_minutes must be " + strconv.Itoa(MinTimeoutMinutes) + "–" + strconv.Itoa(MaxTimeoutMinutes) + ", got " + strconv.Itoa(m)}
	}
	return m, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// Begin writes the "creating" row, before the backend session is asked
// for, and returns its id.
func (s *Store) Begin(ctx context.Context, b Begin) (string, error) {
	m, err := CheckTimeout(b.TimeoutMinutes)
	if err != nil {
		return "", err
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", storeErr("cannot make an id", err)
	}
	id := "bs_" + hex.EncodeToString(raw[:])
	_, err = s.db.ExecContext(ctx, `INSERT INTO browser_sessions (id, state, backend, conversation_id, actor_principal_id, timeout_minutes, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, StateCreating, string(b.Backend), b.ConversationID, b.ActorPrincipalID, m, ms(s.now()))
	if err != nil {
		return "", storeErr("cannot write the creating row", err)
	}
	return id, nil
}

// transition updates id from one of the states in from; it fails with
// validation_failed when the row is not in one of them.
func (s *Store) transition(ctx context.Context, id, set string, args []any, from ...State) error {
	q := `UPDATE browser_sessions SET ` + set + ` WHERE id = ? AND state IN (?` + repeat(", ?", len(from)-1) + `)`
	args = append(args, id)
	for _, f := range from {
		args = append(args, string(f))
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return storeErr("cannot update the session", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.Get(ctx, id); err != nil {
			return err
		}
		return &guard.Error{Code: guard.CodeValidationFailed, Param: "id", Message: "sessions: the session is not in a state that allows this"}
	}
	return nil
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// Activate promotes a "creating" row once the backend session exists.
func (s *Store) Activate(ctx context.Context, id string) error {
	return s.transition(ctx, id, `state = ?, activated_at_ms = ?`, []any{string(StateActive), ms(s.now())}, StateCreating)
}

// ActivateAs is Activate that also records the backend that serves the
// session (a record begun before selection has none).
func (s *Store) ActivateAs(ctx context.Context, id string, backend browserbackend.Kind) error {
	return s.transition(ctx, id, `state = ?, activated_at_ms = ?, backend = ?`, []any{string(StateActive), ms(s.now()), string(backend)}, StateCreating)
}

// Fail marks a "creating" row "error" (the backend session could not be
// made); reason must not hold secrets.
func (s *Store) Fail(ctx context.Context, id, reason string) error {
	return s.transition(ctx, id, `state = ?, closed_at_ms = ?, error = ?`, []any{string(StateError), ms(s.now()), reason}, StateCreating)
}

// End closes an active session (by close, by the agent, or by the sweep)
// and returns its record with the minutes from open to close.
func (s *Store) End(ctx context.Context, id string, by ClosedBy) (Record, error) {
	if by != ClosedByClose && by != ClosedByAgent && by != ClosedBySweep {
		return Record{}, &guard.Error{Code: guard.CodeValidationFailed, Param: "closed_by", Message: "sessions: unknown closer " + strconv.Quote(string(by))}
	}
	if err := s.transition(ctx, id, `state = ?, closed_at_ms = ?, closed_by = ?`, []any{string(StateClosed), ms(s.now()), string(by)}, StateActive); err != nil {
		return Record{}, err
	}
	return s.Get(ctx, id)
}

// Sweep closes active sessions older than their timeout (closed_by sweep)
// and retires "creating" rows older than their timeout as "error". It
// returns how many rows it changed.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	now := ms(s.now())
	r1, err := s.db.ExecContext(ctx, `UPDATE browser_sessions SET state = ?, closed_at_ms = ?, closed_by = ? WHERE state = ? AND created_at_ms + timeout_minutes * 60000 <= ?`,
		string(StateClosed), now, string(ClosedBySweep), string(StateActive), now)
	if err != nil {
		return 0, storeErr("cannot sweep", err)
	}
	r2, err := s.db.ExecContext(ctx, `UPDATE browser_sessions SET state = ?, closed_at_ms = ?, closed_by = ?, error = ? WHERE state = ? AND created_at_ms + timeout_minutes * 60000 <= ?`,
		string(StateError), now, string(ClosedBySweep), "creation did not finish before the timeout (orphaned)", string(StateCreating), now)
	if err != nil {
		return 0, storeErr("cannot sweep", err)
	}
	n1, _ := r1.RowsAffected()
	n2, _ := r2.RowsAffected()
	return int(n1 + n2), nil
}

// Get returns one record; an unknown id is ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	var r Record
	var state, backend, closedBy string
	var created, activated, closed int64
	err := s.db.QueryRowContext(ctx, `SELECT id, state, backend, conversation_id, actor_principal_id, timeout_minutes, created_at_ms, activated_at_ms, closed_at_ms, closed_by, error FROM browser_sessions WHERE id = ?`, id).
		Scan(&r.ID, &state, &backend, &r.ConversationID, &r.ActorPrincipalID, &r.TimeoutMinutes, &created, &activated, &closed, &closedBy, &r.Error)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, storeErr("cannot read the session", err)
	}
	r.State, r.Backend, r.ClosedBy = State(state), browserbackend.Kind(backend), ClosedBy(closedBy)
	r.CreatedAt, r.ActivatedAt, r.ClosedAt = fromMs(created), fromMs(activated), fromMs(closed)
	if closed != 0 {
		r.Minutes = float64(closed-created) / 60000
	}
	return r, nil
}
