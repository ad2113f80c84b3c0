// Package leasetest is the public conformance suite for implementations of
// the lease.Lease port: whatever decides who may write a cell (celld's
// fleet protocol on a bucket, shard locks on one host, your own).
//
// A Harness starts participants ("nodes") that share one backing (a bucket,
// a directory) and controls their time; the suite checks exclusivity,
// epochs, release, crash takeover and self-fencing. Run it with Run(t, h)
// from a test (NewFleetHarness on your own bucket), or RunReport for a
// report without a *testing.T. The package also ships deliberately broken
// wrappers (Twins) and RunTwins shows that the suite rejects each of them.
package leasetest

import (
	"context"
	"errors"
	"time"

	"github.com/cellb/cellb/core/lease"
)

// Harness creates participants of one shared lease domain.
type Harness interface {
	// NewNode starts a participant.
	NewNode(ctx context.Context) (Node, error)
	// Advance moves every participant's time forward by d (fake clocks) or
	// waits d (real time). Participants must have reacted to the new time
	// (renewed, fenced) when Advance returns.
	Advance(d time.Duration)
	// TTL is how long a crashed participant may keep a cell before others
	// can take it. 0 means a crashed participant's claims end at once (OS
	// locks, which the kernel drops when their process dies): the suite
	// then expects an immediate takeover after Crash.
	TTL() time.Duration
	Close() error
}

// Node is one participant.
type Node interface {
	lease.Lease
	// Close releases everything gracefully.
	Close(ctx context.Context) error
	// Crash stops the participant without releasing anything.
	Crash()
	// Isolate cuts the participant off from renewing its claim (while it
	// keeps running), or restores it. Return ErrUnsupported when the
	// implementation has no such failure mode (then the self-fencing case
	// is skipped).
	Isolate(cut bool) error
	// Pause stops the participant as SIGSTOP stops a process (its time
	// and its background work stand still), or resumes it. On resume its
	// time jumps to the present and its claim's renewal, which nothing
	// else changed, completes before the timers that fell due during the
	// pause run: the order that lets a node forget that its claim lapsed.
	// Return ErrUnsupported when the implementation has no such state
	// (then the pause case is skipped).
	Pause(on bool) error
}

// ErrUnsupported is returned by optional harness operations.
var ErrUnsupported = errors.New("leasetest: not supported by this harness")

// LogEpochs is an optional Harness capability of lease domains whose
// epochs name generations of a cell's log kept in the same backing (the
// fleet's bucket: cells/<cell>/ltx/e<epoch>/…). WriteLogEpoch leaves a file
// of epoch in the cell's log, as a writer of that epoch would have, even
// when no grant of it is known to the lease (a record behind the log: a
// mistyped repair, a record restored from an old copy). The suite then
// expects every later grant of the cell to be above that epoch. A harness
// without this capability (or returning ErrUnsupported) skips the case.
type LogEpochs interface {
	WriteLogEpoch(ctx context.Context, cell string, epoch uint64) error
}
