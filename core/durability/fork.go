package durability

import (
	"context"
	"fmt"
)

// Forker is implemented by a Log that can copy one cell's state into
// another cell that was never written (the LTX log): Durable Objects'
// storage.snapshot() restored into a new object. The caller holds the
// destination's grant at Epoch, so no other writer can start it meanwhile.
type Forker interface {
	Fork(ctx context.Context, req ForkRequest) (ForkResult, error)
}

// ForkRequest is what a fork copies and where.
type ForkRequest struct {
	// Source and Dest are cell keys ("<Class>:<id>").
	Source, Dest string
	// At is the source's state to copy; the zero bookmark copies the
	// newest state the bucket holds.
	At Bookmark
	// Epoch is the destination's grant epoch: the copy is the
	// destination's log in that epoch, so its next activation, under a
	// newer epoch, restores it like any other.
	Epoch uint64
}

// ForkResult says what a fork copied.
type ForkResult struct {
	// At is the source's state the destination now holds.
	At Bookmark
	// Files is how many objects the destination's log got.
	Files int
	// Copied is how many of them were copied inside the bucket
	// (store.Copy); the others (a spooled snapshot) passed through the
	// node.
	Copied int
}

// ForkDestinationWrittenError: a fork's destination is not a cell that
// was never written: the bucket or the local disk holds a state of it, or
// it is active.
type ForkDestinationWrittenError struct {
	Cell string
	// What holds it: an object's key, the local database's path, or
	// "active on this node".
	What string
}

func (e *ForkDestinationWrittenError) Error() string {
	return fmt.Sprintf("fork: the destination %s has been written (%s): a fork copies only into a cell never written", e.Cell, e.What)
}

// NoForkError: a fork was asked of a runtime whose log cannot fork (every
// log but the LTX log) or whose lease gives no epochs to write the copy
// under.
type NoForkError struct {
	Cell   string
	Reason string
}

func (e *NoForkError) Error() string {
	return fmt.Sprintf("fork of %s: %s", e.Cell, e.Reason)
}
