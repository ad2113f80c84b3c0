package celltest

import (
	"context"
	"strings"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/lease"
)

// Twins of the runtime's own promises (alarms, the grant check, commits
// without capture). The runtime is core/cell's and has no hooks for
// breaking it, so each of these breaks the port or option the promise
// rests on, in a way that shows as the promise broken: a clock, a lease, a
// driver's counters or rollback, a runtime option. See docs/conformance.md
// for the case that has no twin.

// NoAlarmResidency sets Options.AlarmResidency negative: idle objects are
// evicted whatever their alarm, as a runtime without residency does.
func NoAlarmResidency(o *cell.Options) { o.AlarmResidency = -1 }

// ShortTimers wraps the runtime's clock so that no timer waits longer than
// 2 s (as a timer wheel whose span is too short would): a retry then comes
// 2 s after every failure, as under an alarm policy without backoff.
func ShortTimers(o *cell.Options) { o.Clock = cappedClock{clock.Or(o.Clock), 2 * time.Second} }

type cappedClock struct {
	clock.Clock
	max time.Duration
}

func (c cappedClock) NewTimer(d time.Duration) clock.Timer {
	return cappedTimer{c.Clock.NewTimer(min(d, c.max)), c.max}
}

func (c cappedClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return cappedTimer{c.Clock.AfterFunc(min(d, c.max), f), c.max}
}

type cappedTimer struct {
	clock.Timer
	max time.Duration
}

func (t cappedTimer) Reset(d time.Duration) bool { return t.Timer.Reset(min(d, t.max)) }

// ClockAhead wraps the runtime's clock so that Now reads two hours ahead
// of its timers (a wall clock read in the wrong zone, say): when a timer
// fires, an alarm the stored row puts later reads as due, so the timer,
// not the row, decides.
func ClockAhead(o *cell.Options) { o.Clock = aheadClock{clock.Or(o.Clock), 2 * time.Hour} }

type aheadClock struct {
	clock.Clock
	by time.Duration
}

func (c aheadClock) Now() time.Time { return c.Clock.Now().Add(c.by) }

// LeaseNeverFences wraps the runtime's lease so that its grants accept
// every write until they are reported lost: a fenced grant (past its
// deadline, not yet noticed) still acknowledges.
func LeaseNeverFences(o *cell.Options) {
	l := o.Lease
	if l == nil {
		l = lease.None{}
	}
	o.Lease = neverFences{l}
}

type neverFences struct{ lease.Lease }

func (l neverFences) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	g, err := l.Lease.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return unfencedGrant{g}, nil // hides AckChecker too
}

type unfencedGrant struct{ lease.Grant }

func (g unfencedGrant) CheckWrite() error { return g.Grant.Err() }

// RollbackCommits makes Rollback commit (as a wrapper that ends every
// transaction with COMMIT would): the writes of a turn the runtime rolls
// back, such as a panicking alarm handler's, are kept.
func RollbackCommits(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.rollbackCommits = true }}
}

// UncountedChanges answers total_changes() with 0 (as a driver that runs
// each statement on a pooled handle of its own would): without page
// capture the runtime no longer sees row writes, so it hands the log
// nothing for them.
func UncountedChanges(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noChanges = true }}
}

func (c *twinConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if c.noChanges {
		sql = strings.ReplaceAll(sql, "total_changes()", "0")
	}
	if c.textAsBlob {
		args = blobArgs(args)
	}
	if c.validUTF8 {
		args = validUTF8Args(args)
	}
	rows, err := c.Conn.Query(ctx, sql, args...)
	if err != nil || !c.blobAsText {
		return rows, err
	}
	return blobTextRows{rows}, nil
}

// blobTextRows reads every blob column as a string.
type blobTextRows struct{ driver.Rows }

func (r blobTextRows) Values() []any {
	vals := r.Rows.Values()
	out := make([]any, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out[i] = v
	}
	return out
}

// NeverEvictIdle sets Options.IdleTimeout negative: idle objects stay in
// memory for good, as a runtime without idle eviction keeps them.
func NeverEvictIdle(o *cell.Options) { o.IdleTimeout = -1 }

// KeepIdleConnections sets Options.IdleConnTimeout negative: an idle
// object keeps its database connection (and its memory and descriptors)
// for as long as it stays in memory, as every object did before the option.
func KeepIdleConnections(o *cell.Options) { o.IdleConnTimeout = -1 }

// LeaseNeverLost wraps the runtime's lease so that its grants never report
// a loss: Lost never closes and the grant accepts writes after another
// process took the cell, as a lease without a watcher would.
func LeaseNeverLost(o *cell.Options) {
	l := o.Lease
	if l == nil {
		l = lease.None{}
	}
	o.Lease = neverLost{l}
}

type neverLost struct{ lease.Lease }

func (l neverLost) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	g, err := l.Lease.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return lostless{g}, nil
}

type lostless struct{ lease.Grant }

func (lostless) Lost() <-chan struct{} { return nil }
func (lostless) Err() error            { return nil }
func (lostless) CheckWrite() error     { return nil }

// NoRowsAffected reports every Exec as changing no row (a driver that never
// reads sqlite3_changes): counts the runtime derives from it, such as
// whether a KV Delete found its key, are wrong.
func NoRowsAffected(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.noRowsAffected = true }}
}

// TextAsBlob binds every Go string argument as a blob (a driver that binds
// strings with sqlite3_bind_blob): the runtime's rows and KV values are
// stored with the wrong type, so celld reads them differently.
func TextAsBlob(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.textAsBlob = true }}
}

// BlobAsText reads every blob column as a string (sqlite3_column_text
// where sqlite3_column_blob belongs): the runtime can no longer tell a
// value celld stored in V8's format from a JSON text.
func BlobAsText(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.blobAsText = true }}
}

// SanitizesUTF8 makes every string argument valid UTF-8, each run of bad
// bytes one U+FFFD (as a driver that passes strings through a text
// encoder does): keys that are not UTF-8, which celld stores byte for
// byte, collide and sort elsewhere.
func SanitizesUTF8(d driver.Driver) driver.Driver {
	return twinDriver{d, func(c *twinConn) { c.validUTF8 = true }}
}

// validUTF8Args returns args with every string made valid UTF-8.
func validUTF8Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok {
			a = strings.ToValidUTF8(s, "\uFFFD")
		}
		out[i] = a
	}
	return out
}
