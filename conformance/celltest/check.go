package celltest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/wakeport"
)

// checkT is what a case sees: the harness, a private directory, and
// failure reporting that works with or without a testing.T.
type checkT struct {
	ctx context.Context
	h   Harness
	dir string

	rec *suite.Recorder

	mu       sync.Mutex
	cleanups []func()
	nrt      int
}

func (c *checkT) errorf(format string, args ...any) {
	c.rec.Helper()
	c.rec.Errorf(format, args...)
}

// fatalf records a failure and ends the case; call it only from the
// case's own goroutine.
func (c *checkT) fatalf(format string, args ...any) {
	c.rec.Helper()
	c.rec.Fatalf(format, args...)
}

// skipf ends a case that does not apply to the harness; call it only from
// the case's own goroutine.
func (c *checkT) skipf(format string, args ...any) { c.rec.Skipf(format, args...) }

func (c *checkT) logf(format string, args ...any) { c.rec.Logf(format, args...) }

func (c *checkT) defer_(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, fn)
}

func (c *checkT) cleanup() {
	c.mu.Lock()
	fns := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	// Each cleanup runs in a goroutine of its own, so that one that
	// panics or ends its case (fatalf) does not stop the others.
	for i := len(fns) - 1; i >= 0; i-- {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { recover() }()
			fns[i]()
		}()
		<-done
	}
}

// rtConfig is what a case may vary in the runtimes it builds.
type rtConfig struct {
	dir   string // data directory; default: a fresh one per runtime
	log   durability.Log
	lease lease.Lease
	clock clock.Clock
	idle  time.Duration // default: never evict
	// connIdle is Options.IdleConnTimeout (default: never release; the
	// alarm cases read the clock's timers).
	connIdle time.Duration
	// driver replaces the harness's driver (wrapped variants of it).
	driver driver.Driver
	// bcw is Options.BlockConcurrencyTimeout (default: the runtime's).
	bcw time.Duration
	// pub publishes alarm changes (wrapped by the harness's WrapWake, as
	// the twins need); nil: no wake index.
	pub wakeport.Publisher
}

// runtime builds a runtime on the harness's driver, closed at the end of
// the case.
func (c *checkT) runtime(cfg rtConfig) *cell.Runtime {
	c.rec.Helper()
	if cfg.dir == "" {
		c.mu.Lock()
		c.nrt++
		cfg.dir = filepath.Join(c.dir, fmt.Sprintf("rt%d", c.nrt))
		c.mu.Unlock()
	}
	if cfg.log == nil {
		cfg.log = durability.Local{}
	}
	if c.h.WrapLog != nil {
		cfg.log = c.h.WrapLog(cfg.log)
	}
	if cfg.idle == 0 {
		cfg.idle = -1
	}
	if cfg.connIdle == 0 {
		cfg.connIdle = -1
	}
	if cfg.driver == nil {
		cfg.driver = c.h.Driver
	}
	if cfg.pub != nil && c.h.WrapWake != nil {
		cfg.pub = c.h.WrapWake(cfg.pub)
	}
	opts := cell.Options{
		ScriptName:              "celltest",
		Driver:                  cfg.driver,
		DataDir:                 cfg.dir,
		Lease:                   cfg.lease,
		Log:                     cfg.log,
		Clock:                   cfg.clock,
		Logger:                  quietLogger(),
		IdleTimeout:             cfg.idle,
		IdleConnTimeout:         cfg.connIdle,
		BlockConcurrencyTimeout: cfg.bcw,
		Wake:                    cfg.pub,
	}
	if c.h.Configure != nil {
		c.h.Configure(&opts)
	}
	rt, err := cell.New(opts)
	if err != nil {
		c.fatalf("cell.New: %v", err)
	}
	c.defer_(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.h.Timeout)
		defer cancel()
		rt.Close(ctx)
	})
	return rt
}

// wait receives from ch within the harness timeout, failing the case
// otherwise.
func wait[T any](c *checkT, ch <-chan T, what string) T {
	c.rec.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(c.h.Timeout):
		c.fatalf("timed out after %v waiting for %s", c.h.Timeout, what)
	case <-c.ctx.Done():
		c.fatalf("cancelled waiting for %s", what)
	}
	var zero T
	return zero
}

// quiet reports whether ch stays silent for d: used only to check that
// something does NOT happen too early (it can never fail a correct
// runtime, only miss a broken one on a slow machine).
func quiet[T any](ch <-chan T, d time.Duration) bool {
	select {
	case <-ch:
		return false
	case <-time.After(d):
		return true
	}
}

// reachesLog reports whether a commit is pending in l within the harness
// timeout. A commit reaches the log from the runtime's own goroutines, so
// a loaded machine may take longer than settle to show it: the case waits
// for it rather than looking once (it still fails a write that never
// reaches the log).
func reachesLog(c *checkT, l *ControlLog) bool {
	deadline := time.Now().Add(c.h.Timeout)
	for l.Pending() == 0 {
		if time.Now().After(deadline) || c.ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// settle is how long a case watches for something that must not happen.
const settle = 60 * time.Millisecond

// isBroken reports whether err is a *cell.BrokenObjectError with the
// reset wording.
func isBroken(err error) bool {
	var b *cell.BrokenObjectError
	return errors.As(err, &b) && strings.HasPrefix(err.Error(), "Durable Object reset because")
}

// openRaw opens a cell's database file directly, bypassing the runtime
// (the runtime must be closed or not yet started).
func (c *checkT) openRaw(dir, key string) driver.Conn {
	c.rec.Helper()
	path, err := cell.DatabasePath(dir, key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	conn, err := c.h.Driver.Open(c.ctx, driver.Config{Path: path})
	if err != nil {
		c.fatalf("open %s: %v", path, err)
	}
	c.defer_(func() { conn.Close() })
	return conn
}

// rawRows runs a query on a raw connection and returns every row.
func (c *checkT) rawRows(conn driver.Conn, q string, args ...any) [][]any {
	c.rec.Helper()
	rows, err := conn.Query(c.ctx, q, args...)
	if err != nil {
		c.fatalf("query %q: %v", q, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := rows.Values()
		row := make([]any, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = append([]byte(nil), b...)
			}
			row[i] = v
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		c.fatalf("query %q: %v", q, err)
	}
	return out
}

// eventually polls cond until it holds, failing the case after the
// harness timeout.
func (c *checkT) eventually(what string, cond func() bool) {
	c.rec.Helper()
	deadline := time.Now().Add(c.h.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.fatalf("timed out after %v waiting for %s", c.h.Timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func driverConfig(path string) driver.Config { return driver.Config{Path: path} }
