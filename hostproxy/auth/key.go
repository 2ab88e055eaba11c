package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the length of keys LoadOrCreateKey generates, in bytes.
const KeySize = 32

// LoadOrCreateKey returns the signing key stored at path, creating it (32
// random bytes, file mode 0600, parent directory 0700) when the file does not
// exist. An existing file must be at least MinKeyLen bytes and must not be
// readable or writable by group or others; otherwise an error tells the
// operator what to fix. The key is never logged.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("auth: create key directory: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it first: use theirs.
		return readKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: create key file: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("auth: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("auth: write key file: %w", err)
	}
	return key, nil
}

func readKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("auth: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("auth: key file %s has mode %04o; it must not be accessible by group or others (chmod 600)", path, st.Mode().Perm())
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read key file: %w", err)
	}
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("auth: key file %s holds %d bytes; at least %d are required", path, len(key), MinKeyLen)
	}
	return key, nil
}
