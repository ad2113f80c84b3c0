package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/internal/httpbuf"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
)

// forwardFunc sends a request to the owner of its cell, as the refusal to
// run it here names it (a fleet peer, or the local process holding the
// cell's shard), and writes the owner's answer to w; on error w is
// untouched.
type forwardFunc func(ctx context.Context, to *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error

// takeoverWait bounds how long a call that the owner provably did not run
// waits for the cell to come free (a restart, a node shutting down) before
// it is answered with the cause.
const takeoverWait = 15 * time.Second

// retryPause is how long such a call waits between two looks.
const retryPause = 20 * time.Millisecond

// notApplied reports whether a forwarding error proves that the owner did
// not run the call: then it may run elsewhere, once the cell comes free.
func notApplied(err error) bool {
	return errors.Is(err, shard.ErrHolderGone) || errors.Is(err, peer.ErrNotApplied)
}

// Route runs call here, as a class's handler would, and reports whether
// the request was answered by its cell's owner instead.
//
// Handlers no longer need it: Handler, PeerHandler and the local socket
// route every class's requests (see routing.go and docs/embedding.md).
// Inside a request they serve, Route just runs call and reports answered
// when the host sent the request to the owner (ErrAnsweredByOwner).
//
// For a request served some other way (Setup.Mux mounted directly), Route
// forwards r itself when another node or process owns the cell (body is
// the request body already read, or nil: then at most peer.MaxBody bytes
// of it are read, a larger one is a *peer.BodyTooLargeError), the owner's
// answer is written to w, and Route reports answered. When the owner
// provably did not run the call — it is shutting down, gone, or was named
// by a stale view — Route looks again until the cell comes free (and runs
// the call here) or has a new owner (and forwards it there): a restart or
// a graceful shutdown loses no call. An owner lost mid-call is reported as
// such (*lease.ShardOwnerLostError, *peer.OwnerLostError), never retried.
//
// When answered is false, the handler answers itself: err is call's (or
// the forwarding's) error, for httperr.Write.
func (h *Host) Route(w http.ResponseWriter, r *http.Request, body []byte, call func() error) (answered bool, err error) {
	if h.slotOf(r.Context()) != nil {
		err := call()
		if errors.Is(err, ErrAnsweredByOwner) {
			return true, nil
		}
		return false, err
	}
	return h.reach(r.Context(), call, func(oe *lease.CellOwnedElsewhereError) error {
		if r.Header.Get(peer.HeaderForwarded) != "" {
			// Forwarded here on a view that is stale already: the call
			// did not run, and the sender may look again.
			w.Header().Set(peer.HeaderNotApplied, "owned elsewhere")
			return oe
		}
		if body == nil {
			b, err := peer.ReadBody(r, peer.MaxBody)
			if err != nil {
				return err
			}
			body = append([]byte{}, b...)
		}
		return nil
	}, func(oe *lease.CellOwnedElsewhereError) error {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return h.forward(r.Context(), oe, w, r)
	})
}

// Fetch delivers req to the object's ServeHTTP at its cell's owner, as
// stub.Fetch does on a runtime the host built (which routes by itself);
// on another runtime it routes through Route. The body is at most
// peer.MaxBody bytes.
func Fetch[O any](h *Host, ctx context.Context, stub *cell.Stub[O], req *http.Request) (*http.Response, error) {
	req = req.WithContext(ctx)
	var resp *http.Response
	rec := httpbuf.New()
	answered, err := h.Route(rec, req, nil, func() (err error) {
		resp, err = stub.Fetch(ctx, req)
		return err
	})
	if answered {
		return rec.Response(req, false), nil
	}
	return resp, err
}

// NotRoutedError is a typed call (cell.Call, Call) for a cell another node
// or process owns that the host could not route. A typed call is a Go
// function: it cannot cross to the owner. Inside a request served by
// Handler (or the peer port, or the local socket) the host sends the whole
// request to the owner instead — but only when the refused call is the
// first cell call of the request and the handler has not started its
// answer; Reason says which condition failed. Outside any request it is
// never routed: use Stub.Fetch, which is. It unwraps to the
// *lease.CellOwnedElsewhereError (answered 409 by httperr).
type NotRoutedError struct {
	Owned  *lease.CellOwnedElsewhereError // nil when the call was refused before it ran (Reason says why)
	Reason string
}

func (e *NotRoutedError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = reasonNoRequest
	}
	if e.Owned == nil {
		return "cell call not routed: " + reason
	}
	where := "another node"
	if e.Owned.Owner != "" {
		where = fmt.Sprintf("%s at %q", e.Owned.Owner, e.Owned.Addr)
	}
	return fmt.Sprintf("%s (%s); not routed: %s. Make the call first in a handler served by Host.Handler, or use Stub.Fetch", e.Owned.Error(), where, reason)
}

// HTTPStatus is 409 (Conflict): httperr answers it with the whole message.
func (e *NotRoutedError) HTTPStatus() int { return http.StatusConflict }

func (e *NotRoutedError) Unwrap() error {
	if e.Owned == nil {
		return nil
	}
	return e.Owned
}

// Call runs fn on the object as cell.Call does. Inside a request the host
// serves, a call for a cell owned elsewhere may send the whole request to
// the owner (it then returns ErrAnsweredByOwner); otherwise it fails with
// *NotRoutedError, which says why and how to route the call.
func Call[O, R any](ctx context.Context, stub *cell.Stub[O], fn func(ctx context.Context, obj O) (R, error)) (R, error) {
	out, err := cell.Call(ctx, stub, fn)
	var nr *NotRoutedError
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &nr) && errors.As(err, &oe) {
		return out, &NotRoutedError{Owned: oe}
	}
	return out, err
}
