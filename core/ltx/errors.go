package ltx

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched (errors.Is) by every *CorruptError.
var ErrCorrupt = errors.New("corrupt LTX file")

// CorruptError reports an LTX file that cannot be trusted.
type CorruptError struct {
	Key    string // the object key, when known
	Reason string
	Err    error // the codec's error, if any
}

func (e *CorruptError) Error() string {
	msg := "corrupt LTX file"
	if e.Key != "" {
		msg += " " + e.Key
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *CorruptError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrCorrupt, e.Err}
	}
	return []error{ErrCorrupt}
}

func corrupt(reason string, err error) *CorruptError { return &CorruptError{Reason: reason, Err: err} }

// ErrTxNotAvailable: the log holds no file to restore from.
var ErrTxNotAvailable = errors.New("no LTX files to restore from")

// GapError: the log's chain breaks between After and Next.
type GapError struct {
	Epoch uint64 // the epoch being planned, when one
	After TXID   // the chain is complete up to here
	Next  TXID   // the next file starts here (Next > After+1)
}

func (e *GapError) Error() string {
	return fmt.Sprintf("LTX chain has a gap: TXIDs %d..%d are missing (chain ends at %d, next file starts at %d)",
		e.After+1, e.Next-1, e.After, e.Next)
}

// TXIDNotRestorableError: the requested TXID lies inside a file that spans
// several transactions (or beyond the log), so no image at exactly it exists.
type TXIDNotRestorableError struct {
	Want    TXID
	Nearest TXID // the latest restorable TXID below Want (0 if none)
}

func (e *TXIDNotRestorableError) Error() string {
	if e.Nearest == 0 {
		return fmt.Sprintf("TXID %d cannot be restored: no restorable TXID at or below it", e.Want)
	}
	return fmt.Sprintf("TXID %d cannot be restored exactly; the nearest restorable TXID below it is %d", e.Want, e.Nearest)
}
