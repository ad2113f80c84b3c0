//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package shard

import (
	"errors"
	"os"
)

const flockSupported = false

var errNoFlock = errors.New("shard: flock(2) is not available on this platform")

func tryLock(f *os.File) (bool, error) { return false, errNoFlock }

func unlock(f *os.File) error { return errNoFlock }
