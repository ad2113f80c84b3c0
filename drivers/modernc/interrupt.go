package modernc

import (
	"context"
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// watch arranges for SQLite to be interrupted if ctx ends before the
// returned stop is called. A context that can never end costs nothing.
func (c *Conn) watch(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	armed := true // guarded by c.intrMu
	stopAfter := context.AfterFunc(ctx, func() {
		c.intrMu.Lock()
		defer c.intrMu.Unlock()
		if !armed || c.db == 0 {
			return
		}
		// A TLS belongs to one goroutine at a time and c.tls is busy
		// running the statement, so this goroutine brings its own.
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_interrupt(tls, c.db)
		tls.Close()
	})
	return func() {
		stopAfter()
		// Taking the lock waits out an interrupt already under way, so
		// none lands on a later statement.
		c.intrMu.Lock()
		armed = false
		c.intrMu.Unlock()
	}
}

// ctxError prefers the context's error when it ended during the call (the
// SQLite error is then SQLITE_INTERRUPT), keeping both reachable.
func ctxError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
