package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// fileVault is the -vault file: credential name → username and password,
// read once at start. It serves every actor alike (the example has one).
type fileVault map[string]tools.Credential

// loadVault reads a -vault file. The file must be a regular file that only
// its owner can read or write (mode 0600 or stricter): a credential store
// others can read is refused. Errors name the file, never its content.
func loadVault(path string) (fileVault, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("-vault: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("-vault %s: must be a regular file readable by its owner only (chmod 600), is %v", path, fi.Mode())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-vault: %w", err)
	}
	var entries map[string]struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		// The decoder's message may quote the file: say only where.
		return nil, fmt.Errorf("-vault %s: not a JSON object of {\"username\", \"password\"} entries", path)
	}
	v := fileVault{}
	for name, e := range entries {
		v[name] = tools.Credential{Username: e.Username, Password: e.Password}
	}
	return v, nil
}

var errNoEntry = errors.New("mcp: no such vault entry")

// Credential returns the entry called name.
func (v fileVault) Credential(_ context.Context, _ browserbackend.Invocation, name string) (tools.Credential, error) {
	c, ok := v[name]
	if !ok {
		return tools.Credential{}, errNoEntry
	}
	return c, nil
}
