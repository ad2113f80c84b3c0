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

// Route runs call here, as a class's handler would. When another node or
// process owns the cell, it forwards the request r there (body is the
// request body already read, or nil: then at most peer.MaxBody bytes of
// it are read, a larger one is a *peer.BodyTooLargeError), the owner's
// answer is written to w, and Route reports answered. When the owner
// provably did not run the call — it is shutting down, gone, or was named
// by a stale view — Route looks again until the cell comes free (and runs
// the call here) or has a new owner (and forwards it there): a restart or
// a graceful shutdown loses no call. An owner lost mid-call is reported as
// such (*lease.ShardOwnerLostError, *peer.OwnerLostError), never retried.
//
// When answered is false, the handler answers itself: err is call's (or
// the forwarding's) error, for httperr.Write. Calls the host cannot route
// (no peer listener, no local socket) return the
// *lease.CellOwnedElsewhereError.
func (h *Host) Route(w http.ResponseWriter, r *http.Request, body []byte, call func() error) (answered bool, err error) {
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
		if h.forward == nil || oe.Addr == "" {
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
		ferr := h.forward(r.Context(), oe, w, r)
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
			deadline = h.clk.Now().Add(takeoverWait)
		} else if h.clk.Now().After(deadline) {
			return false, ferr
		}
		t := h.clk.NewTimer(retryPause)
		select {
		case <-r.Context().Done():
			t.Stop()
			return false, r.Context().Err()
		case <-t.C():
		}
	}
}

// Fetch delivers req to the object's ServeHTTP, as stub.Fetch does, at its
// cell's owner: here when this node owns it or can take it, else
// forwarded over the peer protocol or the local socket (Route). The body
// is at most peer.MaxBody bytes.
func Fetch[O any](h *Host, ctx context.Context, stub *cell.Stub[O], req *http.Request) (*http.Response, error) {
	req = req.WithContext(ctx)
	var resp *http.Response
	rec := newRecorder()
	answered, err := h.Route(rec, req, nil, func() (err error) {
		resp, err = stub.Fetch(ctx, req)
		return err
	})
	if answered {
		return rec.response(req), nil
	}
	return resp, err
}

// NotRoutedError is a typed call (Call) for a cell another node or process
// owns. A typed call is a Go function: it cannot cross to the owner, so it
// runs only where the cell is owned. Route the request instead — serve it
// with Host.Handler and a class handler that wraps the call in Route, or
// send it with Fetch. It unwraps to the *lease.CellOwnedElsewhereError
// (answered 409 by httperr).
type NotRoutedError struct {
	Owned *lease.CellOwnedElsewhereError
}

func (e *NotRoutedError) Error() string {
	where := "another node"
	if e.Owned.Owner != "" {
		where = fmt.Sprintf("%s at %q", e.Owned.Owner, e.Owned.Addr)
	}
	return fmt.Sprintf("%s: a typed call runs only where its cell is owned (%s); send it as an HTTP request through Host.Handler with Route, or host.Fetch", e.Owned.Error(), where)
}

func (e *NotRoutedError) Unwrap() error { return e.Owned }

// Call runs fn on the object as cell.Call does. Typed calls do not route:
// for a cell owned elsewhere it fails with *NotRoutedError, which says how
// to route the call.
func Call[O, R any](ctx context.Context, stub *cell.Stub[O], fn func(ctx context.Context, obj O) (R, error)) (R, error) {
	out, err := cell.Call(ctx, stub, fn)
	var oe *lease.CellOwnedElsewhereError
	if errors.As(err, &oe) {
		return out, &NotRoutedError{Owned: oe}
	}
	return out, err
}

// recorder is the http.ResponseWriter a forwarded Fetch is answered into.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (b *recorder) Header() http.Header { return b.header }

func (b *recorder) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *recorder) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *recorder) response(req *http.Request) *http.Response {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", b.status, http.StatusText(b.status)), StatusCode: b.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: b.header, Body: io.NopCloser(bytes.NewReader(b.body.Bytes())),
		ContentLength: int64(b.body.Len()), Request: req,
	}
}
