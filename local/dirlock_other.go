//go:build !unix

package local

import "os"

// lockOwner never gets the lock outside Unix systems: the owner holds none,
// and the sweep never removes a directory with an owner lock file.
func lockOwner(*os.File) bool { return false }
