package cell_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/lease"
)

// TestHTTPStatus is the runtime's half of the error-to-status mapping, one
// row per error kind, each wrapped as the runtime wraps it.
func TestHTTPStatus(t *testing.T) {
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
		status, msg := cell.HTTPStatus(c.err)
		if status != c.status || msg != c.msg {
			t.Errorf("HTTPStatus(%v) = %d %q, want %d %q", c.err, status, msg, c.status, c.msg)
		}
	}
}

// refuseAll is a lease under which another node owns every cell.
type refuseAll struct{}

func (refuseAll) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	class, id, _ := strings.Cut(key, ":")
	return nil, &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: "n2"}
}

// noDriver opens nothing: the lease refuses every cell before a database
// is opened.
type noDriver struct{}

func (noDriver) Name() string                      { return "none" }
func (noDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (noDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	return nil, errors.New("no driver")
}

// TestStubServeHTTPOwnedElsewhereIs409: a stub answers a cell owned by
// another node as every other CellB handler does (409 with the protocol's
// wording), not 503.
func TestStubServeHTTPOwnedElsewhereIs409(t *testing.T) {
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: refuseAll{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ns, err := cell.Register(rt, "Counter", NewCounter)
	if err != nil {
		t.Fatal(err)
	}
	stub := ns.Get(ns.IDFromName("x"))
	w := httptest.NewRecorder()
	stub.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	want := fmt.Sprintf("Durable Object Counter/%s is owned by another node", stub.ID())
	if w.Code != http.StatusConflict || strings.TrimSpace(w.Body.String()) != want {
		t.Fatalf("%d %q, want 409 %q", w.Code, w.Body.String(), want)
	}
}

// notRouted is a refusal that states its status, as core/host's
// *NotRoutedError does; it wraps the refusal.
type notRouted struct {
	owned *lease.CellOwnedElsewhereError
}

func (e notRouted) Error() string   { return "not routed: " + e.owned.Error() }
func (e notRouted) HTTPStatus() int { return 409 }
func (e notRouted) Unwrap() error   { return e.owned }
