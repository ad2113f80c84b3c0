package cell

import (
	"context"
	"errors"
	"net/http"

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
//	*lease.ShardOwnerLostError      502 (the holder went away mid-call)
//	*lease.LeaseLapsedError         503 (this node's lease lapsed)
//	*lease.RecordLostError          503 (the cell's ownership record is gone)
//	*BrokenObjectError              503 (the object was reset)
//	ErrClosed, context.Canceled     503 (refused before it ran)
//	anything else                   500
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
	}
	return http.StatusInternalServerError, err.Error()
}
