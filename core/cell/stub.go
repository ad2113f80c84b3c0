package cell

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/cellb/cellb/core/httperr"
)

// Stub calls one object. A call made with the context of another object's
// handler yields that handler for the duration of the call (its turn ends
// and its transaction commits, as with Await).
type Stub[O any] struct {
	ns *Namespace[O]
	id ID
}

// ID is the object's id.
func (s *Stub[O]) ID() ID { return s.id }

// Key is the object's cell key.
func (s *Stub[O]) Key() string { return CellKey(s.ns.cls.name, s.id) }

// callMethod runs the method e with its encoded arg on the object and
// returns the encoded reply: the client-side entry of every typed method
// call (Method.Call, CallMethod, CallEncoded). It is routed like Fetch,
// through the Router (see MethodRouter), yielding the caller's turn.
func (s *Stub[O]) callMethod(ctx context.Context, e *methodEntry, arg []byte) ([]byte, error) {
	here := func() ([]byte, error) { return s.ns.rt.methodHere(ctx, s.ns.cls, s.id, e, arg) }
	rtr := s.ns.rt.opts.Router
	if rtr == nil {
		return here()
	}
	var reply []byte
	// Yielded for the whole routing: see Call.
	err := yield(ctx, func(context.Context) (err error) {
		reply, err = routeMethod(ctx, rtr, s.ns.cls.name, s.id, e, arg, here)
		return err
	})
	return reply, err
}

// Call runs fn on the object inside one event: fn holds the object's input
// gate, its storage calls join the implicit transaction, and its result is
// returned only once every commit made before it is durable (the output
// gate). fn must use the context it is given for storage calls.
//
// An error returned by fn is an ordinary reply: writes made before it are
// committed. A panic in fn rolls back the open transaction, resets the
// object and returns a *BrokenObjectError.
//
// A call for a cell another node or process owns goes through
// Options.Router, which decides whether it can reach the owner (see
// Router); without one it fails with *lease.CellOwnedElsewhereError.
func Call[O, R any](ctx context.Context, s *Stub[O], fn func(ctx context.Context, obj O) (R, error)) (R, error) {
	var out R
	here := func() error {
		return s.ns.rt.dispatch(ctx, s.ns.cls, s.id, func(ctx context.Context, obj any) error {
			o, ok := obj.(O)
			if !ok {
				return fmt.Errorf("cell: object of class %s is %T, not %T", s.ns.cls.name, obj, *new(O))
			}
			var err error
			out, err = fn(ctx, o)
			return err
		})
	}
	var err error
	if rtr := s.ns.rt.opts.Router; rtr != nil {
		// The caller's turn is yielded for the whole routing, as for the
		// call itself: a call sent to another node must not hold the
		// calling object's gate (the owner may call back into it).
		err = yield(ctx, func(context.Context) error { return rtr.Call(ctx, s.ns.cls.name, s.id, here) })
	} else {
		err = here()
	}
	return out, err
}

// Fetch delivers req to the object's ServeHTTP inside one event. The
// handler's request carries the event's context (use r.Context() for
// storage calls). A handler that neither flushes nor writes more than
// StreamChunk bytes is answered whole, once every commit made before the
// answer is durable. One that flushes (http.Flusher) or writes more is
// streamed: the response returns at the first flush, with a body
// (ContentLength -1) that reads each chunk once every commit made before
// that chunk is durable; each flush yields the handler's turn, as Await
// does. A failure after the start ends the body with the error. Closing
// the body early makes the handler's next flush fail. Hijacking is not
// supported.
//
// With an Options.Router (a node core/host built), a Fetch for a cell
// another node or process owns is delivered there and answered by the
// owner, whoever calls it; without one it fails with
// *lease.CellOwnedElsewhereError.
func (s *Stub[O]) Fetch(ctx context.Context, req *http.Request) (*http.Response, error) {
	if rtr := s.ns.rt.opts.Router; rtr != nil {
		var resp *http.Response
		// Yielded for the whole routing: see Call.
		err := yield(ctx, func(context.Context) (err error) {
			resp, err = rtr.Fetch(ctx, s.ns.cls.name, s.id, req, func(req *http.Request) (*http.Response, error) {
				return s.fetchHere(ctx, req)
			})
			return err
		})
		return resp, err
	}
	return s.fetchHere(ctx, req)
}

// fetchHere runs a Fetch on this runtime. The caller's turn is yielded
// (and its output gate passed) until the answer starts; the answer's body
// may stream on after that (serveHTTP).
func (s *Stub[O]) fetchHere(ctx context.Context, req *http.Request) (*http.Response, error) {
	var resp *http.Response
	err := yield(ctx, func(ctx context.Context) (err error) {
		resp, err = s.ns.rt.serveHTTP(noEvent(ctx), s.ns.cls, s.id, req)
		return err
	})
	return resp, err
}

// ServeHTTP makes a stub an http.Handler: it forwards r with Fetch and
// writes the reply, a streamed one chunk by chunk, flushed (a stream that
// fails after its start aborts the response: http.ErrAbortHandler). A
// failure is answered as core/httperr maps it (409 for a cell owned
// elsewhere, 503 for a reset object or a closed runtime, 500 for anything
// else), with the message as the body and Retry-After on a 503; only
// httperr.Write's X-Cellb-Not-Applied is left to the handlers.
func (s *Stub[O]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, err := s.Fetch(r.Context(), r)
	if err != nil {
		status, msg := httperr.Status(err)
		if after := httperr.RetryAfter(err); after > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(after))
		}
		http.Error(w, msg, status)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if resp.ContentLength < 0 {
		copyStreamed(w, resp.Body)
		return
	}
	io.Copy(w, resp.Body)
}
