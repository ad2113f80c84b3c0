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

// MissingSnapshotError: an epoch's files do not start at TXID 1 and the
// epoch does not open with celld's epoch marker, so its snapshot (the file
// that holds TXIDs 1..First-1 of that epoch) is missing. Every epoch is its
// own generation: its deltas apply only on top of its own snapshot, never
// on an older epoch's files, so a restore (and a node taking the cell)
// refuses instead of combining them into a state that was never written.
type MissingSnapshotError struct {
	Cell    string
	Epoch   uint64
	Missing string // the key the epoch's snapshot would have: TXIDs 1..First-1
	First   string // the key of the epoch's lowest file still present
	Older   uint64 // the newest older epoch that holds files (0: none)
}

func (e *MissingSnapshotError) Error() string {
	msg := fmt.Sprintf("LTX epoch %d of %s has lost its snapshot: %s is missing (the epoch's lowest file is %s); "+
		"its files apply only on top of that snapshot, so no restore combines them with another epoch. "+
		"Put the missing file back from a copy of the bucket",
		e.Epoch, e.Cell, e.Missing, e.First)
	if e.Older != 0 {
		msg += fmt.Sprintf(", or, to give up every write of epoch %d and restore epoch %d instead, move %s aside",
			e.Epoch, e.Older, EpochPrefix(e.Cell, e.Epoch))
	}
	return msg
}
