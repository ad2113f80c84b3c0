package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/internal/httpbuf"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// Typed method calls across nodes (cell.RegisterMethod): the runtime's
// router sends a method call for a cell owned elsewhere alone, as a Fetch
// is sent, to CallPath/<class>/<id>/<method> on the owner's peer port or
// local socket; the owner runs that method of that object and nothing
// else, and answers its encoded reply, or an error whose kind
// (HeaderCallError) lets the caller rebuild it with its type.

// CallPath prefixes the URLs of method calls sent to a cell's owner. They
// are served on the peer port and the local socket only, never on
// Handler.
const CallPath = "/_cellb/v1/call/"

// HeaderCallError carries the kind of error a method call sent to its
// owner failed with (one of the CallError* kinds); absent on a reply.
const HeaderCallError = "X-Cellb-Call-Error"

// Kinds of HeaderCallError. The caller rebuilds the first five with the
// runtime's types; any other failure becomes a *RemoteCallError.
const (
	CallErrorMethod   = "method"         // *cell.MethodError: what the method returned
	CallErrorBroken   = "broken"         // *cell.BrokenObjectError: the object was reset
	CallErrorTooLarge = "too-large"      // *cell.PayloadTooLargeError: argument or reply over cell.MaxMethodPayload
	CallErrorUnknown  = "unknown-method" // cell.ErrUnknownMethod: the owner has no such method (or class)
	CallErrorCodec    = "codec"          // *cell.CodecError: decoding failed, or another codec
	CallErrorOther    = "runtime"        // anything else (activation, lease, closing): *RemoteCallError
)

// RemoteCallError is a method call that failed at its cell's owner with an
// error the runtime has no type for across nodes: the owner's status and
// message. It answers with the owner's status (httperr.StatusError).
type RemoteCallError struct {
	Owner         string // the owner's node (or process) name, as the refusal named it
	Class, Method string
	Kind          string // HeaderCallError, or "" when the owner answered without one
	Status        int
	Message       string
}

func (e *RemoteCallError) Error() string {
	return fmt.Sprintf("%s.%s at %s failed (%d): %s", e.Class, e.Method, e.Owner, e.Status, e.Message)
}

// HTTPStatus is the owner's status (502 if it had none).
func (e *RemoteCallError) HTTPStatus() int {
	if e.Status < 400 {
		return http.StatusBadGateway
	}
	return e.Status
}

// callErrorBody is the JSON body of a failed method call's answer.
type callErrorBody struct {
	Message string `json:"message"`
	Key     string `json:"key,omitempty"`    // broken
	Reason  string `json:"reason,omitempty"` // broken
	What    string `json:"what,omitempty"`   // too-large
	Size    int    `json:"size,omitempty"`   // too-large
	Limit   int    `json:"limit,omitempty"`  // too-large
	Op      string `json:"op,omitempty"`     // codec
}

// CallMethod is the router's cell.MethodRouter: a method call is sent
// alone to its cell's owner, inside a request or not.
func (rt router) CallMethod(ctx context.Context, class string, id cell.ID, method string, arg []byte, here func() ([]byte, error)) ([]byte, error) {
	if s := rt.h.slotOf(ctx); s != nil {
		return s.callMethod(ctx, class, id, method, arg, here)
	}
	return rt.h.callMethod(ctx, class, id, method, arg, here, nil)
}

// callMethod runs a method call of the request, sent alone to the owner
// unless the request itself came forwarded and none of it ran here.
func (s *slot) callMethod(ctx context.Context, class string, id cell.ID, method string, arg []byte, here func() ([]byte, error)) ([]byte, error) {
	s.mu.Lock()
	if err := s.closedLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.inflight++
	s.mu.Unlock()
	reply, err := s.h.callMethod(ctx, class, id, method, arg, here, s.sendAlone)
	s.mu.Lock()
	s.inflight--
	if !isOwnedElsewhere(err) {
		s.ran = true
	}
	s.mu.Unlock()
	return reply, err
}

// callMethod runs a method call here or sends it to the cell's owner
// (CallPath). gate (nil: allowed) may refuse sending it.
func (h *Host) callMethod(ctx context.Context, class string, id cell.ID, method string, arg []byte, here func() ([]byte, error), gate func(*lease.CellOwnedElsewhereError) error) ([]byte, error) {
	var reply []byte
	var remoteErr error
	sent, err := h.reach(ctx, func() (err error) {
		reply, err = here()
		return err
	}, gate, func(oe *lease.CellOwnedElsewhereError) error {
		out, err := h.callRequest(ctx, class, id, method, arg)
		if err != nil {
			return err
		}
		rec := httpbuf.New()
		if err := h.forward(ctx, oe, rec, out); err != nil {
			return err
		}
		resp := rec.Response(out, false)
		reply, remoteErr = callAnswer(oe.Owner, class, method, resp)
		return nil
	})
	if sent {
		return reply, remoteErr
	}
	return reply, err
}

// callRequest is the method call addressed to the owner's CallPath.
func (h *Host) callRequest(ctx context.Context, class string, id cell.ID, method string, arg []byte) (*http.Request, error) {
	ns, err := h.rt.Namespace(class)
	if err != nil {
		return nil, err
	}
	codec, err := ns.MethodCodec(method)
	if err != nil {
		return nil, err
	}
	u := CallPath + url.PathEscape(class) + "/" + id.String() + "/" + url.PathEscape(method)
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(arg))
	if err != nil {
		return nil, err
	}
	out.Header.Set("Content-Type", codec.ContentType())
	if name := id.Name(); name != "" {
		out.Header.Set(headerCellName, url.PathEscape(name))
	}
	return out, nil
}

// callAnswer is the reply, or the error rebuilt, of an owner's answer to a
// method call.
func callAnswer(owner, class, method string, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	kind := resp.Header.Get(HeaderCallError)
	if resp.StatusCode == http.StatusOK && kind == "" {
		return body.Bytes(), nil
	}
	var eb callErrorBody
	if json.Unmarshal(body.Bytes(), &eb) != nil || eb.Message == "" {
		eb = callErrorBody{Message: strings.TrimSpace(body.String())}
	}
	switch kind {
	case CallErrorMethod:
		return nil, &cell.MethodError{Class: class, Method: method, Message: eb.Message}
	case CallErrorBroken:
		return nil, &cell.BrokenObjectError{Key: eb.Key, Reason: eb.Reason}
	case CallErrorTooLarge:
		return nil, &cell.PayloadTooLargeError{Class: class, Method: method, What: eb.What, Size: eb.Size, Limit: eb.Limit}
	case CallErrorUnknown:
		return nil, fmt.Errorf("%w at %s: %s", cell.ErrUnknownMethod, owner, eb.Message)
	case CallErrorCodec:
		return nil, &cell.CodecError{Class: class, Method: method, Op: eb.Op, Err: errors.New(eb.Message)}
	}
	return nil, &RemoteCallError{Owner: owner, Class: class, Method: method, Kind: kind, Status: resp.StatusCode, Message: eb.Message}
}

// serveCall runs a method call another node or process sent here
// (CallPath). It runs inside a forwarded request's slot, so a call refused
// here is answered "not applied" and never sent on.
func (h *Host) serveCall(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, CallPath)
	parts := strings.Split(rest, "/")
	if r.Method != http.MethodPost || len(parts) != 3 {
		httperr.Write(w, httperr.BadInput("a method call sent to a cell's owner is POST %s<class>/<id>/<method>", CallPath))
		return
	}
	class, hexID, method := parts[0], parts[1], parts[2]
	ns, err := h.rt.Namespace(class)
	if err != nil {
		writeCallError(w, fmt.Errorf("%w (%v)", cell.ErrUnknownMethod, err))
		return
	}
	id, err := ns.IDFromString(hexID)
	if err != nil {
		httperr.Write(w, httperr.BadInput("%v", err))
		return
	}
	id = namedID(ns, id, r)
	codec, err := ns.MethodCodec(method)
	if err != nil {
		writeCallError(w, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != codec.ContentType() {
		writeCallError(w, &cell.CodecError{Class: class, Method: method, Op: "check codec",
			Err: fmt.Errorf("the call is %q, the method's codec is %q", ct, codec.ContentType())})
		return
	}
	arg, err := peer.ReadBody(r, cell.MaxMethodPayload)
	if err != nil {
		var big *peer.BodyTooLargeError
		if errors.As(err, &big) {
			err = &cell.PayloadTooLargeError{Class: class, Method: method, What: "argument", Size: int(max(r.ContentLength, big.Limit+1)), Limit: cell.MaxMethodPayload}
		}
		writeCallError(w, err)
		return
	}
	reply, err := ns.Get(id).CallEncoded(r.Context(), method, arg)
	if err != nil {
		writeCallError(w, err)
		return
	}
	w.Header().Set("Content-Type", codec.ContentType())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply)
}

// writeCallError answers a failed method call: httperr's status (and its
// "not applied" for a closing runtime), HeaderCallError, and the error as
// a JSON callErrorBody.
func writeCallError(w http.ResponseWriter, err error) {
	status, msg := httperr.Status(err)
	body := callErrorBody{Message: msg}
	kind := CallErrorOther
	var (
		me  *cell.MethodError
		be  *cell.BrokenObjectError
		big *cell.PayloadTooLargeError
		ce  *cell.CodecError
	)
	switch {
	case errors.As(err, &me):
		kind, body.Message = CallErrorMethod, me.Message
	case errors.As(err, &be):
		kind, body.Key, body.Reason = CallErrorBroken, be.Key, be.Reason
	case errors.As(err, &big):
		kind, status = CallErrorTooLarge, http.StatusRequestEntityTooLarge
		body.What, body.Size, body.Limit = big.What, big.Size, big.Limit
	case errors.Is(err, cell.ErrUnknownMethod):
		kind, status = CallErrorUnknown, http.StatusNotFound
		body.Message = err.Error()
	case errors.As(err, &ce):
		kind, body.Op, body.Message = CallErrorCodec, ce.Op, ce.Err.Error()
		if !strings.HasPrefix(ce.Op, "encode") {
			status = http.StatusBadRequest // the caller's argument or codec
		}
	}
	if errors.Is(err, cell.ErrClosed) {
		w.Header().Set(peer.HeaderNotApplied, "closing")
	}
	w.Header().Set(HeaderCallError, kind)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
