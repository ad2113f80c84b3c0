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
