//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package nodelog

import (
	"errors"
	"os"
)

// LocalSupported reports whether this platform has the file locks a
// single host's node log is fenced by (LocalSession).
const LocalSupported = false

func tryLock(f *os.File) (bool, error) {
	return false, errors.New("nodelog: file locks are not supported on this platform")
}

func unlock(f *os.File) error {
	return errors.New("nodelog: file locks are not supported on this platform")
}
