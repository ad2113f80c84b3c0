// Package httperr is CellB's one mapping from errors to HTTP answers: the
// status, the message (the body), Retry-After and the X-Cellb-Not-Applied
// header. Every handler that answers for cells uses it: the example apps,
// cellb serve, core/host, and cell.Stub's ServeHTTP.
//
//	*BadInputError                  400 (the request is malformed)
//	an error with HTTPStatus() int  that status, its own message (core/host's *NotRoutedError: 409 saying why)
//	*peer.BodyTooLargeError         413 (a body over peer.MaxBody to forward)
//	*http.MaxBytesError             413 (a body over the server's limit)
//	*peer.OwnerLostError            502 (the owner went away mid-call)
//	*peer.ForwardError              409 (owned elsewhere, forwarding failed; the cause is in the message)
//	*lease.CellOwnedElsewhereError  409 (owned by another node or process)
//	a full disk (IsDiskFull)        503 "database or disk is full"
//	*lease.LeaseLapsedError         503 (this node's lease lapsed)
//	*lease.RecordLostError          503 (the cell's ownership record is gone)
//	*lease.ShardOwnerLostError      502 (the shard's holder went away mid-call)
//	*cell.BrokenObjectError         503 (the object was reset)
//	cell.ErrClosed                  503 with X-Cellb-Not-Applied: closing
//	context.Canceled                503 (refused before it ran)
//	*cell.ActivationError           503 (opening or restoring the cell failed; the next call tries again)
//	anything else                   500
//
// The first row that matches (errors.As, errors.Is) wins. Every 503 carries
// Retry-After (RetryAfter: 30 seconds for a full disk, 1 otherwise).
//
// The runtime's errors are named through the leaf core/cellerr and the
// peer port's through core/peererr (core/cell and core/peer alias them),
// so this package links neither the runtime nor the fleet, and core/cell
// answers a stub's failures with it.
package httperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cellb/cellb/core/cellerr"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peererr"
)

// BadInputError is a request the handler refuses before any cell is
// called: answered 400 with Msg.
type BadInputError struct{ Msg string }

func (e *BadInputError) Error() string { return e.Msg }

// BadInput makes a *BadInputError from a format.
func BadInput(format string, args ...any) error {
	return &BadInputError{Msg: fmt.Sprintf(format, args...)}
}

// StatusError is an error that names its own status; it is answered with
// that status and its whole message. core/host's *NotRoutedError is one,
// so its answer says why the call was not routed.
type StatusError interface {
	error
	HTTPStatus() int
}

// Status maps err to an HTTP status and the message to answer with: the
// error's own wording, without the runtime's wrapping where the error
// names its cell. A nil err is 200 with no message.
func Status(err error) (status int, msg string) {
	var (
		se        StatusError
		bad       *BadInputError
		big       *peererr.BodyTooLargeError
		tooBig    *http.MaxBytesError
		lostOwner *peererr.OwnerLostError
		fwd       *peererr.ForwardError
		owned     *lease.CellOwnedElsewhereError
		lapsed    *lease.LeaseLapsedError
		lost      *lease.RecordLostError
		gone      *lease.ShardOwnerLostError
		broken    *cellerr.BrokenObjectError
		act       *cellerr.ActivationError
	)
	if err == nil {
		return http.StatusOK, ""
	}
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, bad.Error()
	case errors.As(err, &se):
		return se.HTTPStatus(), se.Error()
	case errors.As(err, &big):
		return http.StatusRequestEntityTooLarge, big.Error()
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit)
	case errors.As(err, &lostOwner):
		return http.StatusBadGateway, lostOwner.Error()
	case errors.As(err, &fwd):
		// Owned elsewhere and the owner could not be reached: the cause
		// stays in the message.
		return http.StatusConflict, fwd.Error()
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
	case errors.Is(err, cellerr.ErrClosed), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, err.Error()
	case errors.As(err, &act):
		return http.StatusServiceUnavailable, act.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// Write answers err: its status, text/plain, the message and a newline as
// the body, and Retry-After on a 503. A call refused because the runtime
// is closing also carries X-Cellb-Not-Applied: closing (it never ran, so
// another process may run it instead).
func Write(w http.ResponseWriter, err error) {
	status, msg := Status(err)
	if errors.Is(err, cellerr.ErrClosed) {
		w.Header().Set(peererr.HeaderNotApplied, "closing")
	}
	if after := RetryAfter(err); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}
