package cell

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/lease"
)

// HTTPStatus maps an error from a call (Call, Fetch) to the HTTP status
// CellB answers it with, and the message to answer with: the error's own
// wording, without the runtime's wrapping where the error names its cell.
//
//	an error with HTTPStatus() int  that status, its own message (a router's
//	                                refusal that says why, e.g. core/host's
//	                                *NotRoutedError, 409)
//	*lease.CellOwnedElsewhereError  409 (owned by another node or process)
//	a full disk (IsDiskFull)        503 "database or disk is full"
//	*lease.ShardOwnerLostError      502 (the holder went away mid-call)
//	*lease.LeaseLapsedError         503 (this node's lease lapsed)
//	*lease.RecordLostError          503 (the cell's ownership record is gone)
//	*BrokenObjectError              503 (the object was reset)
//	ErrClosed, context.Canceled     503 (refused before it ran)
//	*ActivationError                503 (opening or restoring the cell failed; the next call tries again)
//	anything else                   500
//
// Every 503 is worth retrying: RetryAfter says after how long.
//
// It is the runtime's half of CellB's one error-to-status mapping:
// Stub.ServeHTTP answers with it, and core/httperr extends it with the
// errors of routing calls between nodes (which the runtime never returns).
func HTTPStatus(err error) (status int, msg string) {
	var (
		owned  *lease.CellOwnedElsewhereError
		lapsed *lease.LeaseLapsedError
		lost   *lease.RecordLostError
		gone   *lease.ShardOwnerLostError
		broken *BrokenObjectError
		act    *ActivationError
		says   interface {
			error
			HTTPStatus() int
		}
	)
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.As(err, &says):
		return says.HTTPStatus(), says.Error()
	case errors.As(err, &owned):
		return http.StatusConflict, owned.Error()
	case IsDiskFull(err):
		return http.StatusServiceUnavailable, DiskFullMessage
	case errors.As(err, &lapsed):
		return http.StatusServiceUnavailable, lapsed.Error()
	case errors.As(err, &lost):
		return http.StatusServiceUnavailable, lost.Error()
	case errors.As(err, &gone):
		return http.StatusBadGateway, gone.Error()
	case errors.As(err, &broken):
		return http.StatusServiceUnavailable, broken.Error()
	case errors.Is(err, ErrClosed), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, err.Error()
	case errors.As(err, &act):
		return http.StatusServiceUnavailable, act.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

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

// Retry-After values, in seconds: a full disk needs an operator, so
// clients wait longer; anything else answered 503 (activation, a closing
// runtime, a lapsed lease) is usually over within a second or two.
const (
	RetryAfterDiskFull = 30
	RetryAfterDefault  = 1
)

// RetryAfter is the Retry-After header's value, in seconds, for a call that
// failed with err: 0 unless HTTPStatus answers it 503.
func RetryAfter(err error) int {
	if status, _ := HTTPStatus(err); status != http.StatusServiceUnavailable {
		return 0
	}
	if IsDiskFull(err) {
		return RetryAfterDiskFull
	}
	return RetryAfterDefault
}
