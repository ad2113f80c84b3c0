//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package flock

import "os"

// Supported reports whether this platform has flock(2).
const Supported = false

// TryLock fails with ErrUnsupported.
func TryLock(f *os.File) (bool, error) { return false, ErrUnsupported }

// Unlock fails with ErrUnsupported.
func Unlock(f *os.File) error { return ErrUnsupported }
