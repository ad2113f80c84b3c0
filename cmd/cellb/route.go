package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

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

// notApplied reports whether a forwarding error proves that the owner did
// not run the call: then it may run elsewhere, once the cell comes free.
func notApplied(err error) bool {
	return errors.Is(err, shard.ErrHolderGone) || errors.Is(err, peer.ErrNotApplied)
}

// callRouted runs call here. When another node or process owns the cell,
// it forwards the request there (body is the request body already read, or
// nil: then at most peer.MaxBody bytes of it are read, a larger one is a
// *peer.BodyTooLargeError) and reports answered. When the owner provably
// did not run the call — it is shutting down, gone, or was named by a stale
// view — it looks again until the cell comes free (and runs the call here)
// or has a new owner (and forwards it there): a restart or a graceful
// shutdown loses no call. An owner lost mid-call is reported as such, never
// retried.
func callRouted(w http.ResponseWriter, r *http.Request, body []byte, fwd forwardFunc, call func() error) (answered bool, err error) {
	var deadline time.Time
	for {
		err = call()
		var oe *lease.CellOwnedElsewhereError
		if !errors.As(err, &oe) {
			return false, err
		}
		if r.Header.Get(peer.HeaderForwarded) != "" {
			// Forwarded here on a view that is stale already: the call
			// did not run, and the sender may look again.
			w.Header().Set(peer.HeaderNotApplied, "owned elsewhere")
			return false, err
		}
		if fwd == nil || oe.Addr == "" {
			return false, err
		}
		if body == nil {
			if body, err = peer.ReadBody(r, peer.MaxBody); err != nil {
				return false, err
			}
			if body == nil {
				body = []byte{}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ferr := fwd(r.Context(), oe, w, r)
		if ferr == nil {
			return true, nil
		}
		var lost *lease.ShardOwnerLostError
		if errors.As(ferr, &lost) {
			lost.Class, lost.ID = oe.Class, oe.ID
			return false, lost
		}
		ferr = &peer.ForwardError{Owned: oe, Err: ferr}
		if !notApplied(ferr) {
			return false, ferr
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(takeoverWait)
		} else if time.Now().After(deadline) {
			return false, ferr
		}
		select {
		case <-r.Context().Done():
			return false, r.Context().Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
