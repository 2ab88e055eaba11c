package remote

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors of the Store. Every one of them names no credential.
var (
	// ErrUnauthorized: the pairing secret or device token is unknown, used,
	// expired, revoked or belongs to another endpoint.
	ErrUnauthorized = errors.New("remote: credential not accepted")
	// ErrRenewConflict: the old token was already renewed to a different
	// next_token.
	ErrRenewConflict = errors.New("remote: the credential was already renewed to another token")
	// ErrBusy: a writer did not get the store's lock within the busy
	// timeout (500 ms); the exchange may be retried.
	ErrBusy = errors.New("remote: store is busy")
	// ErrBadToken: next_token is not 43 unpadded base64url characters
	// holding 256 bits, or is already in use.
	ErrBadToken = errors.New("remote: next_token must be a fresh 256-bit unpadded base64url value (43 characters)")
	// ErrTooManyLinks: MaxUnusedLinks unused pairing links exist.
	ErrTooManyLinks = errors.New("remote: too many unused pairing links")
	// ErrNoDevice: Revoke named an unknown device id.
	ErrNoDevice = errors.New("remote: no such device")
)

// MaxUnusedLinks is how many pairing links may wait unused at once.
const MaxUnusedLinks = 100

// storeBusyTimeout is how long a writer waits for the SQLite write lock
// before ErrBusy.
const storeBusyTimeout = 500 * time.Millisecond

// Device is one paired device as the operator sees it: never a
// credential. Times are UTC, millisecond precision; RevokedAt is zero while
// the grant stands.
type Device struct {
	DeviceID string `json:"device_id"`
	// BrowserID is the device's stable browser identity: the hub client id
	// its socket registers under.
	BrowserID string `json:"browser_id"`
	Endpoint  string `json:"endpoint"`
	// Actor is the actor principal the device acts for.
	Actor      string    `json:"actor"`
	Label      string    `json:"label"`
	PairedAt   time.Time `json:"paired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	RenewAfter time.Time `json:"renew_after"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Grant is the answer of a successful pair or renew exchange.
type Grant struct {
	DeviceID   string
	ExpiresAt  time.Time
	RenewAfter time.Time
}

// Link is a freshly created pairing link. URL holds the secret in
// its fragment: show it to the operator once, never log it.
type Link struct {
	URL       string
	ExpiresAt time.Time
}

// LogValue keeps the secret out of logs (slog.LogValuer).
func (l Link) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", "(redacted)"), slog.Time("expires_at", l.ExpiresAt))
}

// StoreOptions configures OpenStore. The zero value works.
type StoreOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store keeps pairing links and device grants in an SQLite file
// (modernc.org/sqlite) that the server and the operator's CLI open at the
// same time: only SHA-256 hashes of secrets and tokens are stored;
// the file is mode 0600; every write is one transaction that takes the
// write lock at its start and waits at most 500 ms for it (then ErrBusy);
// reads (WAL mode) never wait for a writer. Safe for concurrent use.
type Store struct {
	db  *sql.DB
	now func() time.Time
}

const storeSchema = `
CREATE TABLE IF NOT EXISTS remote_links (
	secret_hash TEXT PRIMARY KEY,
	endpoint TEXT NOT NULL,
	actor TEXT NOT NULL,
	created_ms INTEGER NOT NULL,
	expires_ms INTEGER NOT NULL,
	used_ms INTEGER NOT NULL DEFAULT 0,
	revoked_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS remote_devices (
	device_id TEXT PRIMARY KEY,
	browser_id TEXT NOT NULL UNIQUE,
	endpoint TEXT NOT NULL,
	actor TEXT NOT NULL,
	label TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	prev_token_hash TEXT NOT NULL DEFAULT '',
	paired_ms INTEGER NOT NULL,
	expires_ms INTEGER NOT NULL,
	renew_after_ms INTEGER NOT NULL,
	revoked_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS remote_devices_prev ON remote_devices (prev_token_hash);
`

// OpenStore opens (creating when missing, with mode 0600 in a directory of
// mode 0700) the grant store at path.
func OpenStore(path string, opts StoreOptions) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("remote: store directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("remote: store file: %w", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("remote: store file: %w", err)
	}
	dsn := fmt.Sprintf("file:%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
		path, storeBusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("remote: open store: %w", err)
	}
	s := &Store{db: db, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(storeSchema)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// hashSecret is the at-rest form of a secret or token: SHA-256, hex.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh 256-bit unpadded base64url value (43
// characters): the shape of a pairing secret and of a next_token.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidToken reports whether tok is 43 unpadded base64url characters
// decoding to 32 bytes.
func ValidToken(tok string) bool {
	if len(tok) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	return err == nil && len(b) == 32
}

// validSecret reports whether s has the shape of a pairing secret: 32–256
// base64url characters.
func validSecret(s string) bool {
	if len(s) < 32 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED)
}

// write runs fn in one transaction holding the write lock; a lock not
// obtained within the busy timeout is ErrBusy.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		if isBusy(err) {
			return ErrBusy
		}
		return fmt.Errorf("remote: store: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		switch {
		case isBusy(err):
			return ErrBusy
		case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrRenewConflict), errors.Is(err, ErrBadToken),
			errors.Is(err, ErrTooManyLinks), errors.Is(err, ErrNoDevice):
			return err
		}
		return fmt.Errorf("remote: store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		if isBusy(err) {
			return ErrBusy
		}
		return fmt.Errorf("remote: store commit: %w", err)
	}
	return nil
}

// CreateLink stores a new single-use pairing link for endpoint (the public
// wss:// URL of the socket route) acting for actor, valid for ttl,
// and returns it as endpoint#SECRET. At most MaxUnusedLinks unused,
// unexpired links may exist (else ErrTooManyLinks). Operator-only: never
// expose it to a web request.
func (s *Store) CreateLink(ctx context.Context, endpoint, actor string, ttl time.Duration) (Link, error) {
	if ttl <= 0 || ttl > MaxPairingTTL {
		return Link{}, fmt.Errorf("remote: pairing link lifetime %s is outside (0, %s]", ttl, MaxPairingTTL)
	}
	if endpoint == "" || strings.Contains(endpoint, "#") {
		return Link{}, fmt.Errorf("remote: endpoint %q must be a URL without a fragment", endpoint)
	}
	secret := NewToken()
	now := s.now()
	exp := now.Add(ttl)
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM remote_links WHERE used_ms = 0 AND revoked_ms = 0 AND expires_ms > ?`, ms(now)).Scan(&n); err != nil {
			return err
		}
		if n >= MaxUnusedLinks {
			return ErrTooManyLinks
		}
		// Expired and used links are of no further use.
		if _, err := tx.ExecContext(ctx, `DELETE FROM remote_links WHERE expires_ms <= ? OR used_ms != 0 OR revoked_ms != 0`, ms(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO remote_links (secret_hash, endpoint, actor, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)`,
			hashSecret(secret), endpoint, actor, ms(now), ms(exp))
		return err
	})
	if err != nil {
		return Link{}, err
	}
	return Link{URL: endpoint + "#" + secret, ExpiresAt: exp.UTC().Truncate(time.Millisecond)}, nil
}

// Pair consumes the pairing secret (once) of a link of endpoint and
// binds nextToken to a new device labelled label, valid for lifetime and to
// be renewed after renewAfter. Errors: ErrUnauthorized (unknown, used,
// expired or revoked secret, or another endpoint's), ErrBadToken, ErrBusy.
func (s *Store) Pair(ctx context.Context, endpoint, secret, nextToken, label string, lifetime, renewAfter time.Duration) (Grant, error) {
	if !validSecret(secret) {
		return Grant{}, ErrUnauthorized
	}
	if !ValidToken(nextToken) || nextToken == secret {
		return Grant{}, ErrBadToken
	}
	// An unknown secret is refused by a read, without taking the write lock:
	// unauthenticated requests must not contend with the operator's writes.
	if ok, err := s.exists(ctx, `SELECT COUNT(*) FROM remote_links WHERE secret_hash = ? AND endpoint = ?`, hashSecret(secret), endpoint); err != nil || !ok {
		return Grant{}, cmpErr(err, ErrUnauthorized)
	}
	now := s.now()
	g := Grant{DeviceID: randomHex(16), ExpiresAt: fromMs(ms(now.Add(lifetime))), RenewAfter: fromMs(ms(now.Add(renewAfter)))}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var actor string
		var exp, used, revoked int64
		err := tx.QueryRowContext(ctx, `SELECT actor, expires_ms, used_ms, revoked_ms FROM remote_links WHERE secret_hash = ? AND endpoint = ?`,
			hashSecret(secret), endpoint).Scan(&actor, &exp, &used, &revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUnauthorized
		}
		if err != nil {
			return err
		}
		if used != 0 || revoked != 0 || exp <= ms(now) {
			return ErrUnauthorized
		}
		if taken, err := tokenTaken(ctx, tx, nextToken); err != nil || taken {
			return cmpErr(err, ErrBadToken)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE remote_links SET used_ms = ? WHERE secret_hash = ?`, ms(now), hashSecret(secret)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO remote_devices (device_id, browser_id, endpoint, actor, label, token_hash, paired_ms, expires_ms, renew_after_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.DeviceID, randomHex(16), endpoint, actor, label, hashSecret(nextToken), ms(now), ms(g.ExpiresAt), ms(g.RenewAfter))
		return err
	})
	if err != nil {
		return Grant{}, err
	}
	return g, nil
}

// exists runs a COUNT(*) query outside any transaction (it never waits for
// a writer).
func (s *Store) exists(ctx context.Context, q string, args ...any) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("remote: store: %w", err)
	}
	return n > 0, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// tokenTaken reports whether tok is, or was just replaced as, some device's
// credential.
func tokenTaken(ctx context.Context, tx *sql.Tx, tok string) (bool, error) {
	var n int
	h := hashSecret(tok)
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM remote_devices WHERE token_hash = ? OR prev_token_hash = ?`, h, h).Scan(&n)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// Renew rotates a device's credential from oldToken to nextToken:
// the device id stays, the grant's lifetime restarts, and oldToken stops
// opening sockets. An exact retry (the same oldToken and nextToken) returns
// the original answer; another nextToken for an oldToken already renewed is
// ErrRenewConflict. A revoked or expired grant, or another endpoint's
// token, is ErrUnauthorized; a malformed nextToken ErrBadToken; lock
// contention ErrBusy.
func (s *Store) Renew(ctx context.Context, endpoint, oldToken, nextToken string, lifetime, renewAfter time.Duration) (Grant, error) {
	if !ValidToken(oldToken) {
		return Grant{}, ErrUnauthorized
	}
	if !ValidToken(nextToken) || nextToken == oldToken {
		return Grant{}, ErrBadToken
	}
	now := s.now()
	oldH, nextH := hashSecret(oldToken), hashSecret(nextToken)
	if ok, err := s.exists(ctx, `SELECT COUNT(*) FROM remote_devices WHERE (token_hash = ? OR prev_token_hash = ?) AND endpoint = ?`, oldH, oldH, endpoint); err != nil || !ok {
		return Grant{}, cmpErr(err, ErrUnauthorized)
	}
	var g Grant
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exp, revoked int64
		err := tx.QueryRowContext(ctx, `SELECT device_id, expires_ms, revoked_ms FROM remote_devices WHERE token_hash = ? AND endpoint = ?`,
			oldH, endpoint).Scan(&g.DeviceID, &exp, &revoked)
		switch {
		case err == nil:
			if revoked != 0 || exp <= ms(now) {
				return ErrUnauthorized
			}
			if taken, err := tokenTaken(ctx, tx, nextToken); err != nil || taken {
				return cmpErr(err, ErrBadToken)
			}
			g.ExpiresAt, g.RenewAfter = fromMs(ms(now.Add(lifetime))), fromMs(ms(now.Add(renewAfter)))
			_, err := tx.ExecContext(ctx, `UPDATE remote_devices SET token_hash = ?, prev_token_hash = ?, expires_ms = ?, renew_after_ms = ? WHERE device_id = ?`,
				nextH, oldH, ms(g.ExpiresAt), ms(g.RenewAfter), g.DeviceID)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Not current: perhaps the retry of a renewal whose answer was lost.
		var cur string
		var renewAt int64
		err = tx.QueryRowContext(ctx, `SELECT device_id, token_hash, expires_ms, renew_after_ms, revoked_ms FROM remote_devices WHERE prev_token_hash = ? AND endpoint = ?`,
			oldH, endpoint).Scan(&g.DeviceID, &cur, &exp, &renewAt, &revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUnauthorized
		}
		if err != nil {
			return err
		}
		if revoked != 0 || exp <= ms(now) {
			return ErrUnauthorized
		}
		if cur != nextH {
			return ErrRenewConflict
		}
		g.ExpiresAt, g.RenewAfter = fromMs(exp), fromMs(renewAt)
		return nil
	})
	if err != nil {
		return Grant{}, err
	}
	return g, nil
}

// Authenticate returns the device whose current credential is token on
// endpoint, with an unrevoked, unexpired grant; else
// ErrUnauthorized. A read failure is returned as it is. It never waits for
// a writer.
func (s *Store) Authenticate(ctx context.Context, endpoint, token string) (Device, error) {
	if !ValidToken(token) {
		return Device{}, ErrUnauthorized
	}
	d, err := s.scanDevice(s.db.QueryRowContext(ctx, `SELECT `+deviceCols+` FROM remote_devices WHERE token_hash = ? AND endpoint = ?`, hashSecret(token), endpoint))
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, ErrUnauthorized
	}
	if err != nil {
		return Device{}, fmt.Errorf("remote: store: %w", err)
	}
	if !d.RevokedAt.IsZero() || !d.ExpiresAt.After(s.now()) {
		return Device{}, ErrUnauthorized
	}
	return d, nil
}

// Valid returns which of deviceIDs hold an unrevoked, unexpired grant now
// (the server's periodic re-check of open sockets). A read failure is an
// error: the caller closes every socket (fail closed).
func (s *Store) Valid(ctx context.Context, deviceIDs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(deviceIDs))
	if len(deviceIDs) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(deviceIDs)+1)
	args = append(args, ms(s.now()))
	for _, id := range deviceIDs {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT device_id FROM remote_devices WHERE revoked_ms = 0 AND expires_ms > ? AND device_id IN (?`+
		strings.Repeat(", ?", len(deviceIDs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("remote: store: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("remote: store: %w", err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("remote: store: %w", err)
	}
	return out, nil
}

const deviceCols = `device_id, browser_id, endpoint, actor, label, paired_ms, expires_ms, renew_after_ms, revoked_ms`

func (s *Store) scanDevice(row interface{ Scan(...any) error }) (Device, error) {
	var d Device
	var paired, exp, renew, revoked int64
	if err := row.Scan(&d.DeviceID, &d.BrowserID, &d.Endpoint, &d.Actor, &d.Label, &paired, &exp, &renew, &revoked); err != nil {
		return Device{}, err
	}
	d.PairedAt, d.ExpiresAt, d.RenewAfter, d.RevokedAt = fromMs(paired), fromMs(exp), fromMs(renew), fromMs(revoked)
	return d, nil
}

// Devices lists every device grant not revoked, expired ones included,
// oldest first (the operator's "devices" verb). It holds no
// credential.
func (s *Store) Devices(ctx context.Context) ([]Device, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+deviceCols+` FROM remote_devices WHERE revoked_ms = 0 ORDER BY paired_ms, device_id`)
	if err != nil {
		return nil, fmt.Errorf("remote: store: %w", err)
	}
	defer rows.Close()
	var out []Device
	for rows.Next() {
		d, err := s.scanDevice(rows)
		if err != nil {
			return nil, fmt.Errorf("remote: store: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("remote: store: %w", err)
	}
	return out, nil
}

// Revoke ends one device's grant: its token opens no new socket,
// renewals and their retries fail, and open sockets close at the server's
// next re-check (Options.CheckInterval, 250 ms by default). Unknown or
// already revoked: ErrNoDevice.
func (s *Store) Revoke(ctx context.Context, deviceID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE remote_devices SET revoked_ms = ? WHERE device_id = ? AND revoked_ms = 0`, ms(s.now()), deviceID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoDevice
		}
		return nil
	})
}

// RevokeAll revokes every device grant and every unused pairing link
// and returns how many of each it revoked.
func (s *Store) RevokeAll(ctx context.Context) (devices, links int, err error) {
	err = s.write(ctx, func(tx *sql.Tx) error {
		now := ms(s.now())
		r1, err := tx.ExecContext(ctx, `UPDATE remote_devices SET revoked_ms = ? WHERE revoked_ms = 0`, now)
		if err != nil {
			return err
		}
		r2, err := tx.ExecContext(ctx, `UPDATE remote_links SET revoked_ms = ? WHERE revoked_ms = 0 AND used_ms = 0`, now)
		if err != nil {
			return err
		}
		n1, _ := r1.RowsAffected()
		n2, _ := r2.RowsAffected()
		devices, links = int(n1), int(n2)
		return nil
	})
	return devices, links, err
}
