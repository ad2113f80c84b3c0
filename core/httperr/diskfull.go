package httperr

import (
	"errors"
	"strings"
	"syscall"

	"github.com/cellb/cellb/core/driver"
)

// DiskFullMessage is the answer to a call that failed on a full disk,
// SQLite's own wording.
const DiskFullMessage = "database or disk is full"

// IsDiskFull reports whether err comes from a full disk: ENOSPC from the
// operating system, SQLITE_FULL (a *driver.SQLiteError with code 13, or an
// extended code whose low byte is 13), or a driver's error carrying
// SQLite's message for it.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	var se *driver.SQLiteError
	if errors.As(err, &se) && (se.Code == driver.CodeFull || se.ExtendedCode&0xff == driver.CodeFull) {
		return true
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	// A wrapper's message may leave its cause's out (a reset object's
	// does): look at every error in the chain.
	for err != nil {
		if strings.Contains(err.Error(), DiskFullMessage) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if IsDiskFull(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
