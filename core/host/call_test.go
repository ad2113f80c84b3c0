package host

import (
	"context"
	"errors"
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

// TestCallPathNeverSendsOn: the owner's end of a sent method call checks
// the class, id, method and codec before anything runs, and a call it
// cannot run (the cell is owned elsewhere after all) is answered "not
// applied", never sent on.
func TestCallPathNeverSendsOn(t *testing.T) {
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
	if _, err := cell.RegisterMethod(ns, "add", func(ctx context.Context, o obj, n int) (int, error) { return n, nil }); err != nil {
		t.Fatal(err)
	}
	internal := http.NewServeMux()
	internal.HandleFunc(CallPath, h.serveCall)
	srv := h.routed(internal)
	send := func(method, path, ct, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set(peer.HeaderForwarded, "n1")
		r.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	id := ns.IDFromName("x").String()
	const js = "application/json"
	for _, c := range []struct{ method, path, ct, kind, want string }{
		{"POST", CallPath + "Nope/" + id + "/add", js, CallErrorUnknown, `unknown class: \"Nope\"`},
		{"POST", CallPath + "Counter/" + id + "/sub", js, CallErrorUnknown, "unknown method: Counter.sub"},
		{"POST", CallPath + "Counter/abc/add", js, "", "an id is 64 hex digits"},
		{"GET", CallPath + "Counter/" + id + "/add", js, "", "POST " + CallPath + "<class>/<id>/<method>"},
		{"POST", CallPath + "Counter/" + id, js, "", "POST " + CallPath + "<class>/<id>/<method>"},
		{"POST", CallPath + "Counter/" + id + "/add", "application/cbor", CallErrorCodec, `the call is \"application/cbor\"`},
	} {
		w := send(c.method, c.path, c.ct, "1")
		if w.Code/100 != 4 || w.Header().Get(HeaderCallError) != c.kind || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s %s: %d %v %q, want 4xx kind %q saying %q", c.method, c.path, w.Code, w.Header(), w.Body.String(), c.kind, c.want)
		}
	}
	w := send("POST", CallPath+"Counter/"+id+"/add", js, "1")
	if w.Code != 409 || w.Header().Get(peer.HeaderNotApplied) != "owned elsewhere" {
		t.Fatalf("owned elsewhere: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestCallErrorsKeepTheirType: each error the owner answers a method call
// with is rebuilt at the caller with the runtime's type and fields, and
// anything else as a *RemoteCallError with the owner's status.
func TestCallErrorsKeepTheirType(t *testing.T) {
	roundTrip := func(err error) error {
		w := httptest.NewRecorder()
		writeCallError(w, err)
		_, got := callAnswer("n2", "Account", "debit", w.Result())
		return got
	}
	var me *cell.MethodError
	if err := roundTrip(&cell.MethodError{Class: "Account", Method: "debit", Message: "insufficient funds"}); !errors.As(err, &me) || me.Message != "insufficient funds" || me.Class != "Account" || me.Method != "debit" {
		t.Errorf("method error: %T %v", err, err)
	}
	var be *cell.BrokenObjectError
	if err := roundTrip(&cell.BrokenObjectError{Key: "Account:ab", Reason: "a handler panicked: boom"}); !errors.As(err, &be) || be.Key != "Account:ab" || be.Reason != "a handler panicked: boom" {
		t.Errorf("broken: %T %v", err, err)
	}
	var big *cell.PayloadTooLargeError
	if err := roundTrip(&cell.PayloadTooLargeError{Class: "Account", Method: "debit", What: "reply", Size: 2 << 20, Limit: cell.MaxMethodPayload}); !errors.As(err, &big) || big.What != "reply" || big.Size != 2<<20 || big.Limit != cell.MaxMethodPayload {
		t.Errorf("too large: %T %v", err, err)
	}
	if status, _ := httperr.Status(big); status != 413 {
		t.Errorf("a payload over the limit is answered %d, want 413", status)
	}
	if err := roundTrip(errors.Join(cell.ErrUnknownMethod, errors.New("Account.debit"))); !errors.Is(err, cell.ErrUnknownMethod) {
		t.Errorf("unknown: %T %v", err, err)
	}
	var ce *cell.CodecError
	if err := roundTrip(&cell.CodecError{Class: "Account", Method: "debit", Op: "decode argument", Err: errors.New("bad json")}); !errors.As(err, &ce) || ce.Op != "decode argument" || ce.Err.Error() != "bad json" {
		t.Errorf("codec: %T %v", err, err)
	}
	var re *RemoteCallError
	if err := roundTrip(&cell.ActivationError{Key: "Account:ab", Err: errors.New("disk gone")}); !errors.As(err, &re) || re.Status != 503 || re.Kind != CallErrorOther || !strings.Contains(re.Message, "disk gone") || re.Owner != "n2" {
		t.Errorf("other: %T %v", err, err)
	}
	// A closing owner never ran the call: "not applied", so the caller
	// looks again.
	w := httptest.NewRecorder()
	writeCallError(w, cell.ErrClosed)
	if w.Header().Get(peer.HeaderNotApplied) != "closing" {
		t.Errorf("closing: %v", w.Header())
	}
}
