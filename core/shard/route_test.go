package shard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// holderServer serves h on a unix socket and returns its address.
func holderServer(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "unix:" + path
}

func routedRequest(body string) *http.Request {
	return httptest.NewRequest("POST", "/counter/x?k=v", strings.NewReader(body))
}

func TestRouterForwardsTheCallAndItsAnswer(t *testing.T) {
	addr := holderServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+string(b)+" from "+r.Header.Get(peer.HeaderForwarded))
		w.WriteHeader(201)
		io.WriteString(w, "done")
	}))
	rt := &Router{Self: "b"}
	rec := httptest.NewRecorder()
	if err := rt.Forward(context.Background(), addr, rec, routedRequest("payload")); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Body.String() != "done" || rec.Header().Get("X-Seen") != "POST /counter/x?k=v payload from b" {
		t.Fatalf("answer %d %q %q", rec.Code, rec.Body.String(), rec.Header().Get("X-Seen"))
	}
	// A routed call is never routed again.
	again := routedRequest("")
	again.Header.Set(peer.HeaderForwarded, "a")
	if err := rt.Forward(context.Background(), addr, httptest.NewRecorder(), again); !errors.Is(err, peer.ErrAlreadyForwarded) {
		t.Fatalf("second hop: %v", err)
	}
}

// Nothing ran at the holder: its socket is gone, or it refused while
// shutting down. The caller may run the call itself.
func TestRouterReportsAHolderThatDidNotRunTheCall(t *testing.T) {
	rt := &Router{Self: "b"}
	gone := "unix:" + filepath.Join(t.TempDir(), "nobody.sock")
	if err := rt.Forward(context.Background(), gone, httptest.NewRecorder(), routedRequest("")); !errors.Is(err, ErrHolderGone) {
		t.Fatalf("no socket: %v, want ErrHolderGone", err)
	}
	closing := holderServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderNotApplied, "closing")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	rec := httptest.NewRecorder()
	if err := rt.Forward(context.Background(), closing, rec, routedRequest("")); !errors.Is(err, ErrHolderGone) {
		t.Fatalf("closing holder: %v, want ErrHolderGone", err)
	}
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Fatal("Forward wrote an answer it did not pass on")
	}
	// A holder named by a stale record refuses the call as owned elsewhere
	// (409, not applied): nothing ran there either.
	stale := holderServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderNotApplied, "owned elsewhere")
		w.WriteHeader(http.StatusConflict)
	}))
	if err := rt.Forward(context.Background(), stale, httptest.NewRecorder(), routedRequest("")); !errors.Is(err, ErrHolderGone) {
		t.Fatalf("stale holder: %v, want ErrHolderGone", err)
	}
	// A plain 503 did run (or may have): it is passed on as the answer.
	plain := holderServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	rec = httptest.NewRecorder()
	if err := rt.Forward(context.Background(), plain, rec, routedRequest("")); err != nil || rec.Code != 503 {
		t.Fatalf("plain 503: %v, code %d", err, rec.Code)
	}
}

// The holder took the call and went away before answering in full: the
// call may or may not have run, and Forward says so without retrying.
func TestRouterReportsAHolderLostMidCall(t *testing.T) {
	calls := 0
	addr := holderServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		io.WriteString(w, "partial")
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	rec := httptest.NewRecorder()
	err := (&Router{Self: "b"}).Forward(context.Background(), addr, rec, routedRequest(""))
	var lost *lease.ShardOwnerLostError
	if !errors.As(err, &lost) || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("got %v, want a *lease.ShardOwnerLostError", err)
	}
	if calls != 1 {
		t.Fatalf("the holder saw %d calls: a lost call must not be retried", calls)
	}
	if rec.Body.Len() != 0 {
		t.Fatal("a truncated answer was passed on")
	}
}

// TryAcquire in a process that does not hold the shard names the holder's
// address, from the record the holder wrote when it took the lock; the
// record goes when the holder lets the shard go.
func TestHolderRecordNamesTheRouteToTheHolder(t *testing.T) {
	dir := t.TempDir()
	holder, err := Open(dir, 4, WithAddr("unix:/run/a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := holder.TryAcquire(context.Background(), "Counter:x")
	if err != nil {
		t.Fatal(err)
	}
	h, ok := readHolder(dir, Of("Counter:x", 4))
	if !ok || h.Addr != "unix:/run/a.sock" || h.PID != os.Getpid() {
		t.Fatalf("holder record %+v, %v", h, ok)
	}
	// Another Lease in this process is refused; a record naming this very
	// process is not offered as a route (it would route to itself).
	other, err := Open(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.TryAcquire(context.Background(), "Counter:x")
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &oe) || oe.Addr != "" {
		t.Fatalf("same process: %v (addr %q)", err, oe.Addr)
	}
	// Another Lease in this process that routes, on a socket of its own,
	// is offered the holder's socket: it is another server.
	routing, err := Open(dir, 4, WithAddr("unix:/run/b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer routing.Close()
	if _, err = routing.TryAcquire(context.Background(), "Counter:x"); !errors.As(err, &oe) || oe.Addr != "unix:/run/a.sock" {
		t.Fatalf("same process, another socket: %v", err)
	}
	// A record written by another process is offered.
	if err := writeHolder(dir, Of("Counter:x", 4), Holder{PID: os.Getpid() + 1, Addr: "unix:/run/other.sock"}); err != nil {
		t.Fatal(err)
	}
	_, err = other.TryAcquire(context.Background(), "Counter:x")
	if !errors.As(err, &oe) || oe.Addr != "unix:/run/other.sock" {
		t.Fatalf("other process: %v", err)
	}
	if err := g.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := readHolder(dir, Of("Counter:x", 4)); ok {
		t.Fatal("the holder record outlived the holder's last grant")
	}
	holder.Close()
	other.Close()
}

// closingListener accepts connections on a unix socket named name and
// closes each one without reading any of it, as a holder does with the
// connections still queued when its listener closes; it counts them.
func closingListener(t *testing.T, name string) (addr string, accepted func() int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	n := make(chan int, 1)
	n <- 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n <- <-n + 1
			c.Close()
		}
	}()
	return "unix:" + path, func() int { v := <-n; n <- v; return v }
}

// A holder on a SocketPrefix socket answers 102 before it runs anything
// of a call, so a connection that ends before that answer proves the call
// did not run: the caller may run it itself. A holder on another socket
// promises nothing, and the same ending may follow a call that ran.
func TestRouterTakesAConnectionEndedBeforeAcceptanceAsNotApplied(t *testing.T) {
	rt := &Router{Self: "b"}
	promising, accepted := closingListener(t, SocketPrefix+"1-ab.sock")
	rec := httptest.NewRecorder()
	err := rt.Forward(context.Background(), promising, rec, routedRequest("payload"))
	if !errors.Is(err, ErrHolderGone) || accepted() != 1 {
		t.Fatalf("connection closed unread by a holder that answers 102: %v (accepted %d), want ErrHolderGone", err, accepted())
	}
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Fatal("Forward wrote an answer it did not pass on")
	}
	silent, _ := closingListener(t, "serve-1-ab.sock")
	err = rt.Forward(context.Background(), silent, httptest.NewRecorder(), routedRequest("payload"))
	var lost *lease.ShardOwnerLostError
	if !errors.As(err, &lost) {
		t.Fatalf("connection closed by a holder that promises nothing: %v, want a *lease.ShardOwnerLostError", err)
	}
}

// Once the holder answered 102 the call may have run: losing the holder
// after that is reported as such, and the call is not retried.
func TestRouterReportsAHolderLostAfterAcceptingTheCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), SocketPrefix+"2-cd.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := &http.Server{Handler: Accepting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	err = (&Router{Self: "b"}).Forward(context.Background(), "unix:"+path, httptest.NewRecorder(), routedRequest(""))
	var lost *lease.ShardOwnerLostError
	if !errors.As(err, &lost) || calls.Load() != 1 {
		t.Fatalf("got %v after %d calls, want a *lease.ShardOwnerLostError after one", err, calls.Load())
	}
}

// A holder that answers through Accepting is understood by any HTTP
// client: the 102 is skipped and the final answer passed on whole.
func TestAcceptingAnswers102ThenTheCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), SocketPrefix+"3-ef.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Accepting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Answer", "yes")
		w.WriteHeader(201)
		io.WriteString(w, "done")
	}))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	rec := httptest.NewRecorder()
	if err := (&Router{Self: "b"}).Forward(context.Background(), "unix:"+path, rec, routedRequest("x")); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Body.String() != "done" || rec.Header().Get("X-Answer") != "yes" {
		t.Fatalf("answer %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	resp, err := client.Post("http://holder/x", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(body) != "done" {
		t.Fatalf("plain client: %d %q", resp.StatusCode, body)
	}
}
