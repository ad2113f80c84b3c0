//go:build unix

package fs

import "golang.org/x/sys/unix"

// ignoringEINTR repeats a system call that a signal interrupted.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
