package peer

import "github.com/cellb/cellb/core/peererr"

// ForwardError: the call's cell is owned elsewhere (another node, or the
// local process holding its shard) and forwarding it there failed; Err
// says why. It is answered 409 with the whole message (core/httperr). An
// alias: the type lives in the leaf core/peererr so that core/httperr can
// answer it without linking this package.
type ForwardError = peererr.ForwardError

// OwnerLostError: the call was sent to the owner in full and no complete
// answer came back. It may or may not have been applied; it is not
// retried. An alias of core/peererr's, as ForwardError is.
type OwnerLostError = peererr.OwnerLostError

// BodyTooLargeError: a body larger than a call between nodes may carry.
// It is answered 413. An alias of core/peererr's, as ForwardError is.
type BodyTooLargeError = peererr.BodyTooLargeError
