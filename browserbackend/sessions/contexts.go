package sessions

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// LockDuration is how long a human_login open holds its saved login.
const LockDuration = 15 * time.Minute

// MaxContextNameLen bounds a saved login's name, in characters (at least 1).
const MaxContextNameLen = 64

// Identity is who opens or saves a saved login: the actor principal owns
// saved logins, the agent id and roles match grants.
type Identity struct {
	ActorPrincipalID string
	AgentID          string
	Roles            []string
}

// Grant lets an agent (AgentID) or every agent holding Role reopen a saved
// login; exactly one of the two is set.
type Grant struct {
	AgentID string `json:"agent_id,omitempty"`
	Role    string `json:"role,omitempty"`
}

// SavedContext describes a saved login ("context"), never its content.
// Saved is false until a session persisted its cookies and storage.
type SavedContext struct {
	Name        string    `json:"name"`
	Owner       string    `json:"owner"`
	Saved       bool      `json:"saved"`
	CreatedAt   time.Time `json:"created_at"`
	SavedAt     time.Time `json:"saved_at,omitzero"`
	LockedUntil time.Time `json:"locked_until,omitzero"`
	Grants      []Grant   `json:"grants,omitempty"`
}

// Cookie is one cookie of a StorageState, in CDP's Network.Cookie /
// Network.CookieParam shape. Expires is seconds since the epoch, 0 for a
// session cookie.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires,omitempty"`
	HTTPOnly bool    `json:"httpOnly,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	SameSite string  `json:"sameSite,omitempty"`
}

// OriginStorage is the localStorage of one origin, as key/value pairs.
type OriginStorage struct {
	Origin       string      `json:"origin"`
	LocalStorage [][2]string `json:"localStorage"`
}

// StorageState is what a saved login holds. Its LogValue shows counts
// only: cookies and storage are never logged.
type StorageState struct {
	Cookies []Cookie        `json:"cookies,omitempty"`
	Origins []OriginStorage `json:"origins,omitempty"`
}

// LogValue implements slog.LogValuer without the values.
func (s StorageState) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("cookies", len(s.Cookies)), slog.Int("origins", len(s.Origins)))
}

// ContextOpen describes one opening of a saved login by a session.
type ContextOpen struct {
	Name string
	// Fill: the session writes the login at close (persist_context or
	// human_login). An owner may open its own unsaved login to fill it
	// without a grant.
	Fill bool
	// HumanLogin takes the LockDuration lock for SessionID.
	HumanLogin bool
	SessionID  string
}

const contextSchema = `CREATE TABLE IF NOT EXISTS browser_contexts (
	owner TEXT NOT NULL,
	name TEXT NOT NULL,
	saved INTEGER NOT NULL DEFAULT 0,
	created_at_ms INTEGER NOT NULL,
	saved_at_ms INTEGER NOT NULL DEFAULT 0,
	locked_until_ms INTEGER NOT NULL DEFAULT 0,
	locked_by TEXT NOT NULL DEFAULT '',
	human_done INTEGER NOT NULL DEFAULT 0,
	data BLOB,
	PRIMARY KEY (owner, name)
);
CREATE TABLE IF NOT EXISTS browser_context_grants (
	owner TEXT NOT NULL,
	name TEXT NOT NULL,
	agent_id TEXT NOT NULL DEFAULT '',
	role TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (owner, name, agent_id, role)
)`

// CheckContextName validates a context_name: 1–MaxContextNameLen
// characters, no control characters; otherwise validation_failed.
func CheckContextName(name string) error {
	n := utf8.RuneCountInString(name)
	bad := n < 1 || n > MaxContextNameLen || !utf8.ValidString(name)
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	if bad {
		return &guard.Error{Code: guard.CodeValidationFailed, Param: "context_name",
			Message: "sessions: context_name must be 1–" + strconv.Itoa(MaxContextNameLen) + " characters without control characters"}
	}
	return nil
}

// errNoGrant is the refusal of every saved login the identity may not
// open, whether it exists or not.
var errNoGrant = &guard.Error{Code: guard.CodeForbidden, Param: "context_name",
	Message: "sessions: no saved login of this name is granted to this agent"}

// CreateContext creates the empty saved login name owned by owner; creating
// one that exists is a no-op.
func (s *Store) CreateContext(ctx context.Context, owner, name string) (SavedContext, error) {
	if err := CheckContextName(name); err != nil {
		return SavedContext{}, err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO browser_contexts (owner, name, created_at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		owner, name, ms(s.now()))
	if err != nil {
		return SavedContext{}, storeErr("cannot create the saved login", err)
	}
	return s.Context(ctx, owner, name)
}

// Context returns owner's saved login name with its grants; an unknown one
// is forbidden (param context_name).
func (s *Store) Context(ctx context.Context, owner, name string) (SavedContext, error) {
	c := SavedContext{Name: name, Owner: owner}
	var saved int
	var created, savedAt, locked int64
	err := s.db.QueryRowContext(ctx, `SELECT saved, created_at_ms, saved_at_ms, locked_until_ms FROM browser_contexts WHERE owner = ? AND name = ?`, owner, name).
		Scan(&saved, &created, &savedAt, &locked)
	if errors.Is(err, sql.ErrNoRows) {
		return SavedContext{}, errNoGrant
	}
	if err != nil {
		return SavedContext{}, storeErr("cannot read the saved login", err)
	}
	c.Saved, c.CreatedAt, c.SavedAt = saved != 0, fromMs(created), fromMs(savedAt)
	if lu := fromMs(locked); lu.After(s.now()) {
		c.LockedUntil = lu
	}
	rows, err := s.db.QueryContext(ctx, `SELECT agent_id, role FROM browser_context_grants WHERE owner = ? AND name = ? ORDER BY agent_id, role`, owner, name)
	if err != nil {
		return SavedContext{}, storeErr("cannot read the grants", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g Grant
		if err := rows.Scan(&g.AgentID, &g.Role); err != nil {
			return SavedContext{}, storeErr("cannot read the grants", err)
		}
		c.Grants = append(c.Grants, g)
	}
	if err := rows.Err(); err != nil {
		return SavedContext{}, storeErr("cannot read the grants", err)
	}
	return c, nil
}

// Contexts lists owner's saved logins by name.
func (s *Store) Contexts(ctx context.Context, owner string) ([]SavedContext, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM browser_contexts WHERE owner = ? ORDER BY name`, owner)
	if err != nil {
		return nil, storeErr("cannot list the saved logins", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, storeErr("cannot list the saved logins", err)
		}
		names = append(names, n)
	}
	rows.Close()
	out := make([]SavedContext, 0, len(names))
	for _, n := range names {
		c, err := s.Context(ctx, owner, n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func checkGrant(g Grant) error {
	if (g.AgentID == "") == (g.Role == "") {
		return &guard.Error{Code: guard.CodeValidationFailed, Param: "grant", Message: "sessions: a grant names exactly one of agent_id and role"}
	}
	return nil
}

// GrantContext lets g reopen owner's saved login name.
func (s *Store) GrantContext(ctx context.Context, owner, name string, g Grant) error {
	if err := checkGrant(g); err != nil {
		return err
	}
	if _, err := s.Context(ctx, owner, name); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO browser_context_grants (owner, name, agent_id, role) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		owner, name, g.AgentID, g.Role)
	if err != nil {
		return storeErr("cannot write the grant", err)
	}
	return nil
}

// RevokeContext withdraws g; revoking what was never granted is a no-op.
func (s *Store) RevokeContext(ctx context.Context, owner, name string, g Grant) error {
	if err := checkGrant(g); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM browser_context_grants WHERE owner = ? AND name = ? AND agent_id = ? AND role = ?`,
		owner, name, g.AgentID, g.Role)
	if err != nil {
		return storeErr("cannot delete the grant", err)
	}
	return nil
}

// granted reports whether a grant of owner's name matches who.
func (s *Store) granted(ctx context.Context, owner, name string, who Identity) (bool, error) {
	c, err := s.Context(ctx, owner, name)
	if err != nil {
		return false, err
	}
	for _, g := range c.Grants {
		if g.AgentID != "" && g.AgentID == who.AgentID {
			return true, nil
		}
		for _, r := range who.Roles {
			if g.Role != "" && g.Role == r {
				return true, nil
			}
		}
	}
	return false, nil
}

// OpenContext opens who's saved login o.Name for a session and returns the
// state to restore. Default deny: a saved login opens with a grant
// matching who's agent id or a role; without one only its owner may open
// it, and only while it is unsaved and to fill it (o.Fill). Anything else,
// an unknown name included, is forbidden. A login locked by another
// session's human_login is context_locked; o.HumanLogin takes that lock
// for LockDuration.
func (s *Store) OpenContext(ctx context.Context, who Identity, o ContextOpen) (StorageState, error) {
	if err := CheckContextName(o.Name); err != nil {
		return StorageState{}, err
	}
	c, err := s.Context(ctx, who.ActorPrincipalID, o.Name)
	if err != nil {
		return StorageState{}, err
	}
	ok, err := s.granted(ctx, who.ActorPrincipalID, o.Name, who)
	if err != nil {
		return StorageState{}, err
	}
	if !ok && (c.Saved || !o.Fill) {
		return StorageState{}, errNoGrant
	}
	now := s.now()
	lockUntil, lockBy := int64(0), ""
	if o.HumanLogin {
		lockUntil, lockBy = ms(now.Add(LockDuration)), o.SessionID
	}
	// One statement takes the lock, so two opens cannot both get it.
	res, err := s.db.ExecContext(ctx, `UPDATE browser_contexts SET locked_until_ms = CASE WHEN ? THEN ? ELSE locked_until_ms END,
		locked_by = CASE WHEN ? THEN ? ELSE locked_by END, human_done = CASE WHEN ? THEN 0 ELSE human_done END
		WHERE owner = ? AND name = ? AND (locked_until_ms <= ? OR locked_by = ?)`,
		o.HumanLogin, lockUntil, o.HumanLogin, lockBy, o.HumanLogin, who.ActorPrincipalID, o.Name, ms(now), o.SessionID)
	if err != nil {
		return StorageState{}, storeErr("cannot lock the saved login", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return StorageState{}, &guard.Error{Code: guard.CodeContextLocked, Param: "context_name",
			Message: "sessions: a human login holds this saved login until " + c.LockedUntil.Format(time.RFC3339)}
	}
	return s.readState(ctx, who.ActorPrincipalID, o.Name)
}

// MarkHumanLoginDone records the second save_context of a human_login
// session: the person finished, the lock is released and the close
// persists the login. Another session's call is validation_failed.
func (s *Store) MarkHumanLoginDone(ctx context.Context, owner, name, sessionID string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE browser_contexts SET human_done = 1, locked_until_ms = 0, locked_by = '' WHERE owner = ? AND name = ? AND locked_by = ? AND locked_until_ms > ?`,
		owner, name, sessionID, ms(s.now()))
	if err != nil {
		return storeErr("cannot mark the saved login", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return &guard.Error{Code: guard.CodeValidationFailed, Param: "context_name", Message: "sessions: this session holds no human_login lock on the saved login"}
	}
	return nil
}

// HumanLoginDone reports whether MarkHumanLoginDone ran since the last
// human_login open.
func (s *Store) HumanLoginDone(ctx context.Context, owner, name string) (bool, error) {
	var done int
	err := s.db.QueryRowContext(ctx, `SELECT human_done FROM browser_contexts WHERE owner = ? AND name = ?`, owner, name).Scan(&done)
	if err != nil {
		return false, storeErr("cannot read the saved login", err)
	}
	return done != 0, nil
}

// SaveState writes st into owner's saved login name (sealed when the
// Store has a key), marks it saved and releases any lock.
func (s *Store) SaveState(ctx context.Context, owner, name string, st StorageState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return storeErr("cannot encode the saved login", err)
	}
	if s.aead != nil {
		data, err = s.seal(data, owner, name)
		if err != nil {
			return err
		}
	}
	res, err := s.db.ExecContext(ctx, `UPDATE browser_contexts SET data = ?, saved = 1, saved_at_ms = ?, locked_until_ms = 0, locked_by = '', human_done = 0 WHERE owner = ? AND name = ?`,
		data, ms(s.now()), owner, name)
	if err != nil {
		return storeErr("cannot write the saved login", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errNoGrant
	}
	return nil
}

// ReleaseContext drops sessionID's human_login lock, if it holds one.
func (s *Store) ReleaseContext(ctx context.Context, owner, name, sessionID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE browser_contexts SET locked_until_ms = 0, locked_by = '' WHERE owner = ? AND name = ? AND locked_by = ?`,
		owner, name, sessionID)
	if err != nil {
		return storeErr("cannot release the saved login", err)
	}
	return nil
}

func (s *Store) readState(ctx context.Context, owner, name string) (StorageState, error) {
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM browser_contexts WHERE owner = ? AND name = ?`, owner, name).Scan(&data)
	if err != nil {
		return StorageState{}, storeErr("cannot read the saved login", err)
	}
	var st StorageState
	if len(data) == 0 {
		return st, nil
	}
	if s.aead != nil {
		if data, err = s.open(data, owner, name); err != nil {
			return StorageState{}, err
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return StorageState{}, storeErr("cannot decode the saved login (sealed with another key?)", err)
	}
	return st, nil
}

// newAEAD is AES-GCM under key (16, 24 or 32 bytes).
func newAEAD(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, &guard.Error{Code: guard.CodeValidationFailed, Param: "key", Message: "sessions: the key must be 16, 24 or 32 bytes", Err: err}
	}
	return cipher.NewGCM(blk)
}

// seal is nonce || AES-GCM(data), bound to the row by its owner and name.
func (s *Store) seal(data []byte, owner, name string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(data)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, storeErr("cannot make a nonce", err)
	}
	return s.aead.Seal(nonce, nonce, data, []byte(owner+"\x00"+name)), nil
}

func (s *Store) open(data []byte, owner, name string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(data) < n {
		return nil, storeErr("cannot open the saved login", errors.New("sealed data is too short"))
	}
	out, err := s.aead.Open(nil, data[:n], data[n:], []byte(owner+"\x00"+name))
	if err != nil {
		return nil, storeErr("cannot open the saved login (sealed with another key?)", err)
	}
	return out, nil
}
