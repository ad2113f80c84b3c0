package peer

import (
	"fmt"

	"github.com/cellb/cellb/core/lease"
)

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
