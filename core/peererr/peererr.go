// Package peererr holds the peer port's errors that CellB answers over
// HTTP (a body too large to forward, an owner lost mid-call, a failed
// forward) and the header that marks a call refused before it ran.
// core/peer names them by alias (peer.BodyTooLargeError,
// peer.OwnerLostError, peer.ForwardError, peer.HeaderNotApplied), which is
// how callers match them; they live in this leaf so that core/httperr can
// recognise them without linking core/peer, which the runtime (cell.Stub
// answers with core/httperr) must not link.
package peererr

import (
	"fmt"

	"github.com/cellb/cellb/core/lease"
)

// HeaderNotApplied marks an answer that refused a call before running any
// of it: the node is shutting down, or the request was signed for another
// node or incarnation (the sender's view of the owner is stale). The
// sender may look up the owner again and send the call there, or run it
// itself, without risking it twice.
const HeaderNotApplied = "X-Cellb-Not-Applied"

// BodyTooLargeError: a body larger than a call between nodes may carry.
// It is answered 413.
type BodyTooLargeError struct {
	Limit int64
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("request body too large: a call forwarded to another node or process carries at most %d bytes", e.Limit)
}

// OwnerLostError: the call was sent to the owner in full and no complete
// answer came back. It may or may not have been applied; it is not retried.
type OwnerLostError struct {
	Addr string
	Err  error
}

func (e *OwnerLostError) Error() string {
	return fmt.Sprintf("the owner at %s went away during the forwarded call (%v): the call may or may not have been applied", e.Addr, e.Err)
}

func (e *OwnerLostError) Unwrap() error { return e.Err }

// ForwardError: the call's cell is owned elsewhere (another node, or the
// local process holding its shard) and forwarding it there failed; Err
// says why. It is answered 409 with the whole message, so the cause is not
// lost (see core/httperr).
type ForwardError struct {
	Owned *lease.CellOwnedElsewhereError
	Err   error
}

func (e *ForwardError) Error() string {
	return fmt.Sprintf("%v (forwarding to %s failed: %v)", e.Owned, e.Owned.Addr, e.Err)
}

func (e *ForwardError) Unwrap() []error { return []error{e.Owned, e.Err} }
