//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package nodelog

import (
	"errors"
	"os"
	"syscall"
)

// LocalSupported reports whether this platform has the file locks a
// single host's node log is fenced by (LocalSession).
const LocalSupported = true

// tryLock takes an exclusive flock on f without waiting: false, nil when
// another open file holds it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EAGAIN):
			return false, nil
		default:
			return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// unlock drops the lock on f.
func unlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "funlock", Path: f.Name(), Err: err}
		}
		return nil
	}
}
