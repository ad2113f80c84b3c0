package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
)

// forwardFunc sends a request to the owner of its cell at addr (a fleet
// peer, or the local process holding the cell's shard) and writes the
// owner's answer to w; on error w is untouched.
type forwardFunc func(ctx context.Context, addr string, w http.ResponseWriter, r *http.Request) error

// takeoverWait bounds how long a call waits for a shard whose holder is
// shutting down (a restart) to come free, before it answers 409.
const takeoverWait = 15 * time.Second

// callRouted runs call here. When another node or process owns the cell,
// it forwards the request there once (body is the request body already
// read, or nil) and reports answered. When the local process named as the
// shard's holder is gone or shutting down without having run the call, it
// waits for the shard to come free and runs the call here: a restart loses
// no call. A holder lost mid-call is reported as such, never retried.
func callRouted[T any](w http.ResponseWriter, r *http.Request, body []byte, fwd forwardFunc, call func() (T, error)) (res T, answered bool, err error) {
	res, err = call()
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &oe) || fwd == nil || oe.Addr == "" || r.Header.Get(peer.HeaderForwarded) != "" {
		return res, false, err
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	ferr := fwd(r.Context(), oe.Addr, w, r)
	if ferr == nil {
		return res, true, nil
	}
	var lost *lease.ShardOwnerLostError
	if errors.As(ferr, &lost) {
		lost.Class, lost.ID = oe.Class, oe.ID
		return res, false, lost
	}
	if !errors.Is(ferr, shard.ErrHolderGone) {
		return res, false, fmt.Errorf("%w (forwarding to %s failed: %v)", err, oe.Addr, ferr)
	}
	deadline := time.Now().Add(takeoverWait)
	for {
		select {
		case <-r.Context().Done():
			return res, false, r.Context().Err()
		case <-time.After(20 * time.Millisecond):
		}
		res, err = call()
		if !errors.As(err, &oe) || time.Now().After(deadline) {
			return res, false, err
		}
	}
}
