package shard

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by TryAcquire after Close, and is the Err of every
// grant that Close ended.
var ErrClosed = errors.New("shard lease closed")

// ErrUnsupported is returned by Open where flock(2) is not available.
var ErrUnsupported = errors.New("shard: file locks are not supported on this platform")

// CountMismatchError: the directory was laid out for another shard count.
// Opening it with a different count would place cells in other shards than
// the processes already running use, so two of them could write one cell.
type CountMismatchError struct {
	Dir       string
	Layout    int // the count recorded in the directory
	Requested int // the count passed to Open
}

func (e *CountMismatchError) Error() string {
	return fmt.Sprintf("shard directory %s is laid out for %d shards, not %d: "+
		"changing the count would move cells between shards", e.Dir, e.Layout, e.Requested)
}

// DamagedError: a file of the shard directory is missing or unreadable.
// The lease refuses rather than guess, because a guessed epoch could go
// back and a recreated lock file would not exclude a process still holding
// the old one.
type DamagedError struct {
	Path   string
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("shard file %s is damaged: %s", e.Path, e.Reason)
}
