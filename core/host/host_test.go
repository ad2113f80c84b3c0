package host

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/lease"
)

// noDriver opens nothing: these tests never get as far as a database.
type noDriver struct{}

func (noDriver) Name() string                      { return "none" }
func (noDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (noDriver) Open(context.Context, driver.Config) (driver.Conn, error) {
	return nil, errors.New("noDriver opens nothing")
}

// ownedByN2 is a lease under which node n2 owns every cell.
type ownedByN2 struct{}

func (ownedByN2) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	class, id, _ := strings.Cut(key, ":")
	return nil, &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: "n2", Addr: "10.0.0.6:9201", Incarnation: "i2"}
}

type obj struct{}

func (obj) ServeHTTP(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from here") }

func stubOwnedElsewhere(t *testing.T) *cell.Stub[obj] {
	t.Helper()
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: ownedByN2{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ns, err := cell.Register(rt, "Counter", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return ns.Get(ns.IDFromName("x"))
}

// TestNewRefusesConfig: a configuration New cannot run is refused with
// ErrConfig and says what is missing; the listeners it was given are closed.
func TestNewRefusesConfig(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{DataDir: "d"}, "host: invalid configuration: Config.Driver is required"},
		{Config{Driver: noDriver{}}, "host: invalid configuration: Config.DataDir is required"},
		{Config{Driver: noDriver{}, DataDir: "d", Ownership: Fleet}, "host: invalid configuration: Config.Bucket is required for a fleet or a durability mode"},
		{Config{Driver: noDriver{}, DataDir: "d", Ownership: SingleHost, Fleet: FleetConfig{PeerListener: listen(t)}}, "host: invalid configuration: a peer listener needs Fleet ownership"},
	}
	for _, c := range cases {
		ln := listen(t)
		c.cfg.Listener = ln
		_, err := New(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || err.Error() != c.want {
			t.Errorf("%v, want %q", err, c.want)
		}
		if _, aerr := ln.Accept(); aerr == nil {
			t.Errorf("%q: the listener was left open", c.want)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestServesItsListenerUntilClose: New returns with the classes' routes
// served on Config.Listener; Close stops serving it.
func TestServesItsListenerUntilClose(t *testing.T) {
	ln := listen(t)
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Listener: ln,
		Classes: func(s *Setup) error {
			s.Mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s.Node) })
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/hello"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "local" {
		t.Fatalf("answered %q, want local", b)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("still served after Close")
	}
}

// TestClassesErrorStopsNew: a failing Classes callback fails New, and the
// listener it was given is closed.
func TestClassesErrorStopsNew(t *testing.T) {
	ln := listen(t)
	boom := errors.New("boom")
	_, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Listener: ln,
		Classes: func(s *Setup) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("%v, want boom", err)
	}
	if _, aerr := ln.Accept(); aerr == nil {
		t.Fatal("the listener was left open")
	}
}

// TestCallSaysHowToRoute: a typed call for a cell owned elsewhere fails
// with *NotRoutedError, which names the owner, says how to route, and is
// answered 409 like the refusal it wraps.
func TestCallSaysHowToRoute(t *testing.T) {
	stub := stubOwnedElsewhere(t)
	_, err := Call(context.Background(), stub, func(context.Context, obj) (int, error) { return 1, nil })
	var nr *NotRoutedError
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &nr) || !errors.As(err, &oe) {
		t.Fatalf("%T %v, want *NotRoutedError wrapping *lease.CellOwnedElsewhereError", err, err)
	}
	want := `Durable Object Counter/` + stub.ID().String() + ` is owned by another node (n2 at "10.0.0.6:9201"); not routed: a typed call made outside a request the host serves runs only where its cell is owned. Make the call first in a handler served by Host.Handler, or use Stub.Fetch`
	if err.Error() != want {
		t.Fatalf("%q\nwant %q", err, want)
	}
	if status, _ := httperr.Status(err); status != http.StatusConflict {
		t.Fatalf("status %d, want 409", status)
	}
}

// TestFetchReachesTheOwner: Fetch on a stub whose cell another node owns
// is answered by the owner, through the host's forwarding.
func TestFetchReachesTheOwner(t *testing.T) {
	stub := stubOwnedElsewhere(t)
	var to string
	h := &Host{clk: clock.Real{}, forward: func(_ context.Context, oe *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
		to = oe.Owner + "@" + oe.Addr
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(201)
		io.WriteString(w, "from the owner: "+string(b))
		return nil
	}}
	req := httptest.NewRequest("POST", "/x", strings.NewReader("hi"))
	resp, err := Fetch(h, context.Background(), stub, req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(b) != "from the owner: hi" || to != "n2@10.0.0.6:9201" {
		t.Fatalf("%d %q via %q", resp.StatusCode, b, to)
	}
}
