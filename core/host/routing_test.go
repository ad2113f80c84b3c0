package host

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// routedHost is a host whose runtime's every cell is owned by n2, and
// whose forwarding is fwd; handle serves the mux as Handler does.
func routedHost(t *testing.T, fwd forwardFunc, handle func(ns *cell.Namespace[obj]) http.HandlerFunc) http.Handler {
	t.Helper()
	h := &Host{clk: clock.Real{}, forward: fwd, mux: http.NewServeMux()}
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: ownedByN2{}, Router: router{h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h.rt = rt
	ns, err := cell.Register(rt, "Counter", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	h.mux.HandleFunc("/", handle(ns))
	return h.routed(h.mux)
}

func typedCall(r *http.Request, ns *cell.Namespace[obj], name string) error {
	_, err := cell.Call(r.Context(), ns.Get(ns.IDFromName(name)), func(context.Context, obj) (int, error) { return 1, nil })
	return err
}

// TestRequestGoesWholeToTheOwner: a handler's first typed call for a cell
// owned elsewhere sends the whole request — the body it already read
// included — to the owner; the owner's answer is the answer, and what the
// handler writes afterwards (headers included) is dropped; a later call
// of the request runs nowhere.
func TestRequestGoesWholeToTheOwner(t *testing.T) {
	var got string
	var errs []error
	srv := routedHost(t, func(_ context.Context, oe *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		got = oe.Owner + " " + r.Method + " " + r.URL.RequestURI() + " " + string(b)
		w.Header().Set("X-From", "owner")
		w.WriteHeader(201)
		io.WriteString(w, "owner's answer")
		return nil
	}, func(ns *cell.Namespace[obj]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			head := make([]byte, 3)
			io.ReadFull(r.Body, head) // the handler reads part of the body first
			w.Header().Set("X-From", "handler")
			errs = append(errs, typedCall(r, ns, "a"), typedCall(r, ns, "b"))
			httperr.Write(w, errs[0])
		}
	})
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("POST", "/counter/a?x=1", strings.NewReader("hello body")))
	if w.Code != 201 || w.Body.String() != "owner's answer" || w.Header().Get("X-From") != "owner" {
		t.Fatalf("%d %q %v", w.Code, w.Body.String(), w.Header())
	}
	if got != "n2 POST /counter/a?x=1 hello body" {
		t.Fatalf("forwarded %q", got)
	}
	if !errors.Is(errs[0], ErrAnsweredByOwner) || !errors.Is(errs[1], ErrAnsweredByOwner) {
		t.Fatalf("the calls returned %v", errs)
	}
}

// TestNotRoutedSaysWhy: a refused call is not sent on once the handler
// started its answer; a request that came forwarded is answered "not
// applied" and sent nowhere.
func TestNotRoutedSaysWhy(t *testing.T) {
	fwd := func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
		t.Error("forwarded")
		return nil
	}
	var err error
	srv := routedHost(t, fwd, func(ns *cell.Namespace[obj]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/started" {
				w.WriteHeader(200)
				io.WriteString(w, "partial")
			}
			err = typedCall(r, ns, "a")
			if r.URL.Path != "/started" {
				httperr.Write(w, err)
			}
		}
	})
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("POST", "/started", nil))
	var nr *NotRoutedError
	if !errors.As(err, &nr) || nr.Reason != reasonStarted || w.Body.String() != "partial" {
		t.Fatalf("started: %v; answered %q", err, w.Body.String())
	}
	if status, msg := httperr.Status(err); status != 409 || !strings.Contains(msg, "not routed: the handler already started its answer") {
		t.Fatalf("started: %d %q", status, msg)
	}

	w = httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/forwarded", nil)
	r.Header.Set(peer.HeaderForwarded, "n1")
	srv.ServeHTTP(w, r)
	if w.Code != 409 || w.Header().Get(peer.HeaderNotApplied) == "" {
		t.Fatalf("forwarded: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestNoRouteSaysSo: a host that forwards nothing answers a refused call
// 409 saying so.
func TestNoRouteSaysSo(t *testing.T) {
	var err error
	srv := routedHost(t, nil, func(ns *cell.Namespace[obj]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			err = typedCall(r, ns, "a")
			httperr.Write(w, err)
		}
	})
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	var nr *NotRoutedError
	if !errors.As(err, &nr) || nr.Reason != reasonNoRoute || w.Code != 409 || !strings.Contains(w.Body.String(), "not routed: the owner's address is unknown") {
		t.Fatalf("%v; %d %q", err, w.Code, w.Body.String())
	}
}

// TestFetchPathRefusesBadInputAndNeverSendsOn: the owner's end of a sent
// Fetch checks the class and the id before anything runs, and a Fetch it
// cannot run (the cell is owned elsewhere after all) is answered "not
// applied", never sent on.
func TestFetchPathRefusesBadInputAndNeverSendsOn(t *testing.T) {
	h := &Host{clk: clock.Real{}, mux: http.NewServeMux(), forward: func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
		t.Error("sent on")
		return nil
	}}
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: ownedByN2{}, Router: router{h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h.rt = rt
	ns, err := cell.Register(rt, "Counter", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	internal := http.NewServeMux()
	internal.HandleFunc(FetchPath, h.serveFetch)
	srv := h.routed(internal)
	send := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set(peer.HeaderForwarded, "n1")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	id := ns.IDFromName("x").String()
	for path, want := range map[string]string{
		FetchPath + "Nope/" + id + "/a":                                   `cell: unknown class: "Nope"`,
		FetchPath + "Counter/abc/a":                                       "an id is 64 hex digits",
		FetchPath + "Counter":                                             "a fetch sent to a cell's owner is " + FetchPath + "<class>/<id>/<path>",
		FetchPath + "Counter/" + ns.IDFromName("y").String()[:63] + "0/a": "not made for class Counter",
	} {
		if w := send(path); w.Code != 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %q, want 400 %q", path, w.Code, w.Body.String(), want)
		}
	}
	w := send(FetchPath + "Counter/" + id + "/a?b=1")
	if w.Code != 409 || w.Header().Get(peer.HeaderNotApplied) != "owned elsewhere" {
		t.Fatalf("owned elsewhere: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestOversizedRequestIsNotSent: a request whose body is over peer.MaxBody
// is read no further than the limit and answered 413; nothing is sent.
func TestOversizedRequestIsNotSent(t *testing.T) {
	srv := routedHost(t, func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
		t.Error("an oversized request was sent")
		return nil
	}, func(ns *cell.Namespace[obj]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			httperr.Write(w, typedCall(r, ns, "a"))
		}
	})
	body := &countingBody{size: 200 << 20}
	r := httptest.NewRequest("POST", "/counter/a", nil)
	r.Body, r.ContentLength = io.NopCloser(body), -1
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || body.read > peer.MaxBody+1 {
		t.Fatalf("%d %q after reading %d bytes", w.Code, w.Body.String(), body.read)
	}
}

// someHere is a lease under which this process owns the cells of ids
// named in here, and n2 every other.
type someHere map[string]bool

func (l someHere) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	class, id, _ := strings.Cut(key, ":")
	if l[id] {
		return heldGrant{}, nil
	}
	return nil, &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: "n2", Addr: "10.0.0.6:9201", Incarnation: "i2"}
}

// heldGrant is a grant that is never lost.
type heldGrant struct{}

func (heldGrant) Epoch() uint64                 { return 1 }
func (heldGrant) BucketWins() bool              { return false }
func (heldGrant) Lost() <-chan struct{}         { return nil }
func (heldGrant) Err() error                    { return nil }
func (heldGrant) CheckWrite() error             { return nil }
func (heldGrant) Release(context.Context) error { return nil }

// TestFetchInForwardedRequestReachesOwner: in a request that arrived
// forwarded, a Stub.Fetch made after a typed call ran here is sent alone
// to its own owner (as a new call: without the forwarded request's peer
// headers), and its answer is the Fetch's response. A forwarded request
// whose first call is refused is still answered "not applied".
func TestFetchInForwardedRequestReachesOwner(t *testing.T) {
	h := &Host{clk: clock.Real{}, mux: http.NewServeMux()}
	var sent []string
	h.forward = func(_ context.Context, oe *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
		if r.Header.Get(peer.HeaderForwarded) != "" || r.Header.Get(peer.HeaderNonce) != "" {
			return peer.ErrAlreadyForwarded // as peer.Forwarder does
		}
		sent = append(sent, oe.Owner+" "+r.Method+" "+r.URL.Path)
		io.WriteString(w, "credited")
		return nil
	}
	mine := cell.IDFromName("", "Account", "mine")
	rt, err := cell.New(cell.Options{Driver: noDriver{}, DataDir: t.TempDir(), Lease: someHere{mine.String(): true}, Router: router{h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h.rt = rt
	ns, err := cell.Register(rt, "Account", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	var fetchErr error
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/transfer" {
			// The call runs here (noDriver fails its activation: it ran,
			// and was not refused as owned elsewhere).
			if err := typedCall(r, ns, "mine"); err == nil || isOwnedElsewhere(err) {
				t.Errorf("the typed call here: %v", err)
			}
		}
		req, _ := http.NewRequestWithContext(r.Context(), "POST", "/credit", nil)
		req.Header = r.Header.Clone() // the forwarded request's own headers
		resp, err := ns.Get(ns.IDFromName("theirs")).Fetch(r.Context(), req)
		if fetchErr = err; err != nil {
			httperr.Write(w, err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		w.Write(b)
	})
	srv := h.routed(h.mux)
	send := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", path, nil)
		r.Header.Set(peer.HeaderForwarded, "n1")
		r.Header.Set(peer.HeaderNonce, "abc")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	w := send("/transfer")
	want := "n2 POST " + FetchPath + "Account/" + ns.IDFromName("theirs").String() + "/credit"
	if w.Code != 200 || w.Body.String() != "credited" || len(sent) != 1 || sent[0] != want {
		t.Fatalf("transfer: %d %q (fetch error %v); sent %q, want %q", w.Code, w.Body.String(), fetchErr, sent, want)
	}
	// The first call of a forwarded request refused: not applied, sent
	// nowhere.
	w = send("/credit-only")
	if w.Code != 409 || w.Header().Get(peer.HeaderNotApplied) == "" || len(sent) != 1 {
		t.Fatalf("credit only: %d %v %q; sent %q", w.Code, w.Header(), w.Body.String(), sent)
	}
}
