// Package flock holds the one copy of the advisory file locks that fence
// writers on one host: core/shard's shard locks and core/nodelog's single
// host sessions. A lock belongs to an open file, not to a process, and the
// kernel drops it when the file's last descriptor closes (a process that
// dies for any reason).
package flock

import "errors"

// ErrUnsupported is what TryLock and Unlock return where the platform has
// no flock(2) (Supported is false).
var ErrUnsupported = errors.New("flock(2) is not available on this platform")
