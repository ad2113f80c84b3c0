// Package httperr is CellB's one mapping from errors to HTTP answers: the
// status, the message (the body) and the X-Cellb-Not-Applied header. Every
// handler that answers for cells uses it: the example apps, cellb serve,
// and (through cell.HTTPStatus, the runtime's half of it) cell.Stub.
//
//	*BadInputError                  400 (the request is malformed)
//	an error with HTTPStatus() int  that status, its own message (core/host's *NotRoutedError: 409 saying why)
//	*peer.BodyTooLargeError         413 (a body over peer.MaxBody to forward)
//	*http.MaxBytesError             413 (a body over the server's limit)
//	*peer.OwnerLostError            502 (the owner went away mid-call)
//	*peer.ForwardError              409 (owned elsewhere, forwarding failed; the cause is in the message)
//	*lease.CellOwnedElsewhereError  409 (owned by another node or process)
//	a full disk (cell.IsDiskFull)   503 "database or disk is full"
//	*lease.LeaseLapsedError         503
//	*lease.RecordLostError          503
//	*lease.ShardOwnerLostError      502
//	*cell.BrokenObjectError         503 (the object was reset)
//	cell.ErrClosed                  503 with X-Cellb-Not-Applied: closing
//	context.Canceled                503
//	*cell.ActivationError           503 (opening or restoring the cell failed)
//	anything else                   500
//
// The first row that matches (errors.As, errors.Is) wins. Every 503 carries
// Retry-After (cell.RetryAfter: 30 seconds for a full disk, 1 otherwise).
package httperr

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/peer"
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

// Status maps err to an HTTP status and the message to answer with.
func Status(err error) (status int, msg string) {
	var (
		se     StatusError
		bad    *BadInputError
		big    *peer.BodyTooLargeError
		gone   *peer.OwnerLostError
		fwd    *peer.ForwardError
		tooBig *http.MaxBytesError
	)
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, bad.Error()
	case errors.As(err, &se):
		return se.HTTPStatus(), se.Error()
	case errors.As(err, &big):
		return http.StatusRequestEntityTooLarge, big.Error()
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit)
	case errors.As(err, &gone):
		return http.StatusBadGateway, gone.Error()
	case errors.As(err, &fwd):
		// Owned elsewhere and the owner could not be reached: the cause
		// stays in the message.
		return http.StatusConflict, fwd.Error()
	}
	return cell.HTTPStatus(err)
}

// Write answers err: its status, text/plain, the message and a newline as
// the body. A call refused because the runtime is closing also carries
// X-Cellb-Not-Applied: closing (it never ran, so another process may run
// it instead).
func Write(w http.ResponseWriter, err error) {
	status, msg := Status(err)
	if errors.Is(err, cell.ErrClosed) {
		w.Header().Set(peer.HeaderNotApplied, "closing")
	}
	if after := cell.RetryAfter(err); after > 0 && status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}
