package host

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestRunReturnsNilWhenCtxEnds: Run stops on ctx, closes the host and
// returns nil.
func TestRunReturnsNilWhenCtxEnds(t *testing.T) {
	ln := listen(t)
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Listener: ln, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after ctx ended: %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener is still served after Run returned")
	}
}

// failingListener fails its first Accept: the public server stops serving.
type failingListener struct {
	net.Listener
	err error
}

func (l failingListener) Accept() (net.Conn, error) { return nil, l.err }

// TestRunReturnsTheListenerError: a listener that stops serving stops Run
// with its error, after closing the host.
func TestRunReturnsTheListenerError(t *testing.T) {
	boom := errors.New("accept: boom")
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Listener: failingListener{listen(t), boom}, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want the listener's error", err)
	}
	if h.Close(context.Background()) != nil || !h.draining.Load() {
		t.Fatal("Run did not close the host")
	}
}

// TestRunReturnsTheFenceError: a fleet node whose lease another writer
// overwrote self-fences at its next renewal; Run returns its
// *fleet.FencedError.
func TestRunReturnsTheFenceError(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	h, err := New(ctx, Config{Driver: noDriver{}, DataDir: t.TempDir(), Bucket: s, Ownership: Fleet, Clock: clk, Logger: quietLog,
		Fleet: FleetConfig{Node: "node_run"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, layout.NodeKey("node_run"), []byte(`{"not":"ours"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(context.Background()) }()
	var runErr error
	for stopped := false; !stopped; {
		clk.Advance(fleet.RenewInterval(fleet.DefaultTTL))
		select {
		case runErr = <-done:
			stopped = true
		case <-time.After(10 * time.Millisecond): // let the renewal run, then step again
		}
	}
	var fe *fleet.FencedError
	if !errors.As(runErr, &fe) || fe.Node != "node_run" {
		t.Fatalf("Run: %v, want a *fleet.FencedError for node_run", runErr)
	}
}

// PeerAddr is the advertised peer address, else the peer listener's, and
// "" for a host outside a fleet.
func TestPeerAddr(t *testing.T) {
	ln := listen(t)
	for _, c := range []struct{ advertise, want string }{{"", ln.Addr().String()}, {"10.0.0.7:9201", "10.0.0.7:9201"}} {
		clk := clock.NewFake(time.UnixMilli(1_000_000))
		h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Bucket: memstore.New(), Ownership: Fleet, Clock: clk, Logger: quietLog,
			Fleet: FleetConfig{Node: "node_peer", PeerListener: ln, Advertise: c.advertise}})
		if err != nil {
			t.Fatal(err)
		}
		got := h.PeerAddr()
		h.Close(context.Background())
		if got != c.want {
			t.Errorf("Advertise %q: PeerAddr %q, want %q", c.advertise, got, c.want)
		}
		ln = listen(t) // the closed host closed the first
	}
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if got := h.PeerAddr(); got != "" {
		t.Errorf("a single-host host: PeerAddr %q, want none", got)
	}
}
