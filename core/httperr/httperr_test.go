package httperr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// TestWrite is the whole mapping, one row per error kind, each wrapped as
// a handler receives it.
func TestWrite(t *testing.T) {
	owned := &lease.CellOwnedElsewhereError{Class: "Counter", ID: "x", Owner: "n2", Addr: "127.0.0.1:1"}
	refused := &peer.RefusedError{Addr: "127.0.0.1:1", Message: "peer request not authenticated"}
	lostPeer := &peer.OwnerLostError{Addr: "127.0.0.1:1", Err: io.ErrUnexpectedEOF}
	gone := &lease.ShardOwnerLostError{Class: "Counter", ID: "x", Err: io.ErrUnexpectedEOF}
	lapsed := &lease.LeaseLapsedError{Cell: "Counter:x"}
	lost := &lease.RecordLostError{Scope: "Counter:x"}
	broken := &cell.BrokenObjectError{Key: "Counter:x", Reason: "a handler panicked"}
	activation := func(err error) error { return &cell.ActivationError{Key: "Counter:x", Err: err} }
	cases := []struct {
		name       string
		err        error
		status     int
		body       string
		notApplied string
	}{
		{"bad input", httperr.BadInput("counter name must be 1 to %d bytes", 256), 400, "counter name must be 1 to 256 bytes", ""},
		{"body too large", &peer.BodyTooLargeError{Limit: peer.MaxBody}, 413,
			fmt.Sprintf("request body too large: a call forwarded to another node or process carries at most %d bytes", peer.MaxBody), ""},
		{"owner lost mid-call", lostPeer, 502, lostPeer.Error(), ""},
		{"forwarding failed", &peer.ForwardError{Owned: owned, Err: refused}, 409,
			"Durable Object Counter/x is owned by another node (forwarding to 127.0.0.1:1 failed: the owner at 127.0.0.1:1 refused the forwarded call: peer request not authenticated)", ""},
		{"states its status", fmt.Errorf("call: %w", statusErr{}), 409, "not routed: the handler already answered", ""},
		{"owned elsewhere", activation(owned), 409, "Durable Object Counter/x is owned by another node", ""},
		{"lease lapsed", fmt.Errorf("commit: %w", lapsed), 503, lapsed.Error(), ""},
		{"record lost", activation(lost), 503, lost.Error(), ""},
		{"shard holder lost", gone, 502, gone.Error(), ""},
		{"object reset", broken, 503, "Durable Object reset because a handler panicked", ""},
		{"closing", cell.ErrClosed, 503, "cell: runtime is closed", "closing"},
		{"canceled", context.Canceled, 503, "context canceled", ""},
		{"other", errors.New("disk on fire"), 500, "disk on fire", ""},
		{"ENOSPC", fmt.Errorf("write spool: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), 503, "database or disk is full", ""},
		{"SQLITE_FULL", activation(&driver.SQLiteError{Code: driver.CodeFull, ExtendedCode: driver.CodeFull, Msg: "database or disk is full"}), 503, "database or disk is full", ""},
		{"SQLite's message only", &cell.BrokenObjectError{Key: "Counter:x", Reason: "a commit failed", Err: errors.New("sqlite3: database or disk is full")}, 503, "database or disk is full", ""},
		{"activation failed", activation(errors.New("open the database: no such device")), 503, "cell Counter:x: activation failed: open the database: no such device", ""},
		{"body over the limit", fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 1 << 20}), 413, "request body over 1048576 bytes", ""},
		// Errors that match two rows: the first row wins.
		{"forwarding failed, owner lost", &peer.ForwardError{Owned: owned, Err: lostPeer}, 502, lostPeer.Error(), ""},
		{"reset by a lapsed lease", &cell.BrokenObjectError{Key: "Counter:x", Reason: "the lease was lost", Err: lapsed}, 503, lapsed.Error(), ""},
		{"activation refused, closing", activation(cell.ErrClosed), 503, "cell Counter:x: activation failed: cell: runtime is closed", "closing"},
		{"reset while closing", &cell.BrokenObjectError{Key: "Counter:x", Reason: "the runtime closed", Err: cell.ErrClosed}, 503, "Durable Object reset because the runtime closed", "closing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			httperr.Write(w, c.err)
			if w.Code != c.status || w.Body.String() != c.body+"\n" {
				t.Errorf("%d %q, want %d %q", w.Code, w.Body.String(), c.status, c.body+"\n")
			}
			if got := w.Header().Get(peer.HeaderNotApplied); got != c.notApplied {
				t.Errorf("%s: %q, want %q", peer.HeaderNotApplied, got, c.notApplied)
			}
			wantAfter := ""
			switch {
			case c.status == 503 && c.body == "database or disk is full":
				wantAfter = "30"
			case c.status == 503:
				wantAfter = "1"
			}
			if got := w.Header().Get("Retry-After"); got != wantAfter {
				t.Errorf("Retry-After %q, want %q", got, wantAfter)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if status, msg := httperr.Status(c.err); status != c.status || msg != c.body {
				t.Errorf("Status = %d %q, want %d %q", status, msg, c.status, c.body)
			}
		})
	}
}

// TestStatusRuntimeRows is the runtime's rows of the mapping (what
// cell.HTTPStatus answered before it moved here), one per error kind, each
// wrapped as the runtime wraps it.
func TestStatusRuntimeRows(t *testing.T) {
	owned := &lease.CellOwnedElsewhereError{Class: "Counter", ID: "x", Owner: "n2"}
	gone := &lease.ShardOwnerLostError{Class: "Counter", ID: "x", Err: errors.New("EOF")}
	lapsed := &lease.LeaseLapsedError{Cell: "Counter:x"}
	lost := &lease.RecordLostError{Scope: "Counter:x"}
	broken := &cell.BrokenObjectError{Key: "Counter:x", Reason: "a handler panicked"}
	wrap := func(err error) error { return &cell.ActivationError{Key: "Counter:x", Err: err} }
	cases := []struct {
		err    error
		status int
		msg    string
	}{
		{nil, 200, ""},
		{wrap(owned), 409, owned.Error()},
		{fmt.Errorf("call: %w", notRouted{owned}), 409, "not routed: " + owned.Error()},
		{wrap(gone), 502, gone.Error()},
		{fmt.Errorf("commit: %w", lapsed), 503, lapsed.Error()},
		{wrap(lost), 503, lost.Error()},
		{broken, 503, broken.Error()},
		{cell.ErrClosed, 503, cell.ErrClosed.Error()},
		{fmt.Errorf("call: %w", context.Canceled), 503, "call: context canceled"},
		{errors.New("disk on fire"), 500, "disk on fire"},
	}
	for _, c := range cases {
		status, msg := httperr.Status(c.err)
		if status != c.status || msg != c.msg {
			t.Errorf("Status(%v) = %d %q, want %d %q", c.err, status, msg, c.status, c.msg)
		}
	}
}

// TestStubAgrees: a stub mounted as a handler answers every failure of
// its Fetch (the runtime's own, and a router's) as a handler does with
// Write (one mapping, not two): the same status, body, Retry-After and
// Content-Type. Only X-Cellb-Not-Applied is the handlers' alone.
func TestStubAgrees(t *testing.T) {
	lostPeer := &peer.OwnerLostError{Addr: "127.0.0.1:1", Err: io.ErrUnexpectedEOF}
	owned := &lease.CellOwnedElsewhereError{Class: "Counter", ID: "x", Owner: "n2", Addr: "127.0.0.1:1"}
	rtr := &failingRouter{}
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Router: rtr})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ns, err := cell.Register(rt, "Counter", func(ctx context.Context, st *cell.State) (*struct{}, error) { return &struct{}{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	stub := ns.Get(ns.IDFromName("x"))
	for _, e := range []error{
		&lease.CellOwnedElsewhereError{Class: "Counter", ID: "x"},
		&lease.LeaseLapsedError{Cell: "Counter:x"},
		&lease.RecordLostError{Scope: "Counter:x"},
		&lease.ShardOwnerLostError{Class: "Counter", ID: "x", Err: io.EOF},
		&cell.BrokenObjectError{Key: "Counter:x", Reason: "a handler panicked"},
		cell.ErrClosed, context.Canceled, errors.New("other"),
		syscall.ENOSPC, &cell.ActivationError{Key: "Counter:x", Err: errors.New("bucket unavailable")},
		&peer.BodyTooLargeError{Limit: peer.MaxBody}, lostPeer,
		&peer.ForwardError{Owned: owned, Err: lostPeer},
		&peer.ForwardError{Owned: owned, Err: errors.New("connection refused")},
		fmt.Errorf("call: %w", notRouted{owned}),
	} {
		rtr.err = e
		got := httptest.NewRecorder()
		stub.ServeHTTP(got, httptest.NewRequest("GET", "/", nil))
		want := httptest.NewRecorder()
		httperr.Write(want, e)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("%v: stub %d %q, handler %d %q", e, got.Code, got.Body.String(), want.Code, want.Body.String())
		}
		for _, h := range []string{"Retry-After", "Content-Type"} {
			if g, w := got.Header().Get(h), want.Header().Get(h); g != w {
				t.Errorf("%v: stub's %s %q, handler's %q", e, h, g, w)
			}
		}
		if g := got.Header().Get(peer.HeaderNotApplied); g != "" {
			t.Errorf("%v: stub's %s %q, want none", e, peer.HeaderNotApplied, g)
		}
	}
}

// failingRouter fails every Fetch with err, as a router whose forwarding
// failed does.
type failingRouter struct{ err error }

func (r *failingRouter) Call(ctx context.Context, class string, id cell.ID, here func() error) error {
	return r.err
}

func (r *failingRouter) Fetch(ctx context.Context, class string, id cell.ID, req *http.Request, here func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return nil, r.err
}

// noDriver opens nothing: every Fetch fails in the router first.
type noDriver struct{}

func (noDriver) Name() string                      { return "none" }
func (noDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (noDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	return nil, errors.New("no driver")
}

// notRouted is a refusal that states its status, as core/host's
// *NotRoutedError does; it wraps the refusal.
type notRouted struct {
	owned *lease.CellOwnedElsewhereError
}

func (e notRouted) Error() string   { return "not routed: " + e.owned.Error() }
func (e notRouted) HTTPStatus() int { return 409 }
func (e notRouted) Unwrap() error   { return e.owned }

// statusErr names its own status, as core/host's *NotRoutedError does.
type statusErr struct{}

func (statusErr) Error() string   { return "not routed: the handler already answered" }
func (statusErr) HTTPStatus() int { return 409 }

// TestIsDiskFull: SQLITE_FULL is recognised by its primary code or by the
// low byte of its extended code alone, whatever the driver's message says;
// another SQLite error is not a full disk.
func TestIsDiskFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&driver.SQLiteError{Code: driver.CodeFull, Msg: "write failed"}, true},
		{&driver.SQLiteError{Code: 1, ExtendedCode: driver.CodeFull | 2<<8, Msg: "write failed"}, true},
		{fmt.Errorf("commit: %w", &driver.SQLiteError{Code: 1, ExtendedCode: 1 | 2<<8, Msg: "write failed"}), false},
		{nil, false},
	} {
		if got := httperr.IsDiskFull(c.err); got != c.want {
			t.Errorf("IsDiskFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
