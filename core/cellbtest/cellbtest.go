// Package cellbtest is a testing kit for the classes an application
// registers on a CellB runtime: a node in one process, with an in-memory
// bucket and a fake clock, on which a unit test calls its objects, moves
// time and lets the alarms that fall due run, with the runtime's real
// retry policy, then reads what the cells store.
//
//	node := cellbtest.New(t, wasm.New())
//	ns, _ := cell.Register(node.Runtime, "Room", chatroom.New)
//	// ... cell.Call(ctx, stub, ...) as the application would
//	node.Advance(time.Minute) // due alarms (and their retries) run
//
// The kit takes the SQLite driver as an argument (core imports no driver);
// the wasm driver (drivers/wasm) needs no C toolchain.
package cellbtest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/kvvalue"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/memstore"
)

// Start is where every Node's clock starts (a fixed instant, so tests
// that print times are repeatable).
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Node is one runtime for a test: cell files in the test's temporary
// directory, every commit made durable in an in-memory bucket through the
// LTX log (as a node backed by a real bucket does), each activation under
// a new lease epoch (so a restart is a new session: bookmarks restore as
// on a node), and all of the runtime's timers (alarms, retries, idle eviction) on a fake clock that
// moves only when the test calls Advance.
type Node struct {
	// Runtime is where the test registers its classes and calls them.
	Runtime *cell.Runtime
	// Clock is the runtime's clock, at Start until the test advances it.
	Clock *clock.Fake
	// Bucket holds what the log made durable.
	Bucket *memstore.Store

	t testing.TB
}

// Option changes the runtime's options before New builds it (the kit's
// own settings are made first: the test's win).
type Option func(*cell.Options)

// New builds a node on drv for the test t; it is closed when the test
// ends. The runtime's logs go nowhere unless an Option sets a logger.
func New(t testing.TB, drv driver.Driver, opts ...Option) *Node {
	t.Helper()
	n := &Node{Clock: clock.NewFake(Start), Bucket: memstore.New(), t: t}
	log, err := ltxlog.New(ltxlog.Options{Store: n.Bucket, Logger: discard(), CompactAfter: -1})
	if err != nil {
		t.Fatalf("cellbtest: open the log: %v", err)
	}
	o := cell.Options{
		ScriptName:      "cellbtest",
		Driver:          drv,
		DataDir:         t.TempDir(),
		Log:             log,
		Lease:           &epochLease{},
		Clock:           n.Clock,
		Logger:          discard(),
		IdleTimeout:     -1, // objects stay until the test evicts them
		IdleConnTimeout: -1,
	}
	for _, opt := range opts {
		opt(&o)
	}
	rt, err := cell.New(o)
	if err != nil {
		t.Fatalf("cellbtest: %v", err)
	}
	n.Runtime = rt
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("cellbtest: close the runtime: %v", err)
		}
	})
	return n
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Advance moves the clock forward by d, one timer deadline at a time: at
// each, the timers due fire, and the alarm runs they start (the handler,
// its commit and the reschedule) finish before the clock moves on. An
// alarm that fails is retried on the runtime's backoff (2 s, 4 s, … up to
// six counted failures), so advancing past its retries runs them all; an
// alarm a handler sets for within d runs too. Advance returns when the
// clock is at now+d and no alarm run is in flight.
func (n *Node) Advance(d time.Duration) {
	n.t.Helper()
	target := n.Clock.Now().Add(d)
	for {
		next, ok := n.Clock.NextDeadline()
		if !ok || next.After(target) {
			n.Clock.Set(target)
			n.settle()
			return
		}
		n.Clock.Set(next)
		n.settle()
	}
}

// settle waits until no alarm run is in flight (they run on their own
// goroutines: a timer only starts them).
func (n *Node) settle() {
	n.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for n.Runtime.AlarmsInFlight() > 0 {
		if time.Now().After(deadline) {
			n.t.Fatalf("cellbtest: an alarm run did not finish within a minute")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Rows reads rows from the cell stub names, in one turn of its own
// (activating it if need be), for assertions: every row of query, as
// values in column order.
func Rows[O any](t testing.TB, s *cell.Stub[O], query string, args ...any) [][]any {
	t.Helper()
	var out [][]any
	err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
		var err error
		_, out, err = st.SQL().QueryAll(ctx, query, args...)
		return err
	})
	if err != nil {
		t.Fatalf("cellbtest: %s on %s: %v", query, s.Key(), err)
	}
	return out
}

// KV reads one KV key of the cell stub names; found is false when it is
// absent.
func KV[O any](t testing.TB, s *cell.Stub[O], key string) (v kvvalue.Value, found bool) {
	t.Helper()
	err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
		var err error
		v, found, err = st.KV().Get(ctx, key)
		return err
	})
	if err != nil {
		t.Fatalf("cellbtest: KV %q of %s: %v", key, s.Key(), err)
	}
	return v, found
}

// Alarm reads the alarm of the cell stub names; set is false when it has
// none.
func Alarm[O any](t testing.TB, s *cell.Stub[O]) (at time.Time, set bool) {
	t.Helper()
	err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
		var err error
		at, set, err = st.GetAlarm(ctx)
		return err
	})
	if err != nil {
		t.Fatalf("cellbtest: alarm of %s: %v", s.Key(), err)
	}
	return at, set
}

// Fetch sends a request to an object that implements http.Handler
// (Stub.Fetch) without a network: method and target as for
// httptest.NewRequest, body may be nil. It returns the status and the
// whole body.
func Fetch[O any](t testing.TB, s *cell.Stub[O], method, target string, body io.Reader) (status int, out []byte) {
	t.Helper()
	resp, err := s.Fetch(context.Background(), httptest.NewRequest(method, target, body))
	if err != nil {
		t.Fatalf("cellbtest: %s %s on %s: %v", method, target, s.Key(), err)
	}
	defer resp.Body.Close()
	out, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("cellbtest: read the answer of %s %s: %v", method, target, err)
	}
	return resp.StatusCode, out
}
