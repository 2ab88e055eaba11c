//go:build unix

package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockOwner takes the owner lock of f (an exclusive flock, without waiting)
// and reports whether it got it. The lock lasts as long as f's open file
// description, and the kernel releases it when its process dies, whatever
// PID namespace the process lives in.
func lockOwner(f *os.File) bool {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
