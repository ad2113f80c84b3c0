package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// countingBody is a request body of size bytes that counts what was read.
type countingBody struct{ read, size int64 }

func (c *countingBody) Read(p []byte) (int, error) {
	if c.read >= c.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), c.size-c.read)
	c.read += n
	return int(n), nil
}

var ownedByA = &lease.CellOwnedElsewhereError{Class: "Counter", ID: "x", Owner: "na", Addr: "127.0.0.1:1", Incarnation: "i1"}

// routedAnswer runs Route as a handler does and returns the answer.
func routedAnswer(r *http.Request, fwd forwardFunc, call func() (int, error)) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	var v int
	h := &Host{forward: fwd, clk: clock.Real{}}
	answered, err := h.Route(w, r, nil, func() (err error) {
		v, err = call()
		return err
	})
	switch {
	case answered:
	case err != nil:
		httperr.Write(w, err)
	default:
		fmt.Fprint(w, v)
	}
	return w
}

// TestOversizedForwardedBodyGets413: a body that would be forwarded is read
// no further than the limit and answered 413; nothing is forwarded.
func TestOversizedForwardedBodyGets413(t *testing.T) {
	for _, declared := range []int64{-1, 200 << 20} {
		body := &countingBody{size: 200 << 20}
		r := httptest.NewRequest("POST", "/counter/x", nil)
		r.Body, r.ContentLength = io.NopCloser(body), declared
		w := routedAnswer(r, func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
			t.Error("an oversized body was forwarded")
			return nil
		}, func() (int, error) { return 0, ownedByA })
		want := fmt.Sprintf("request body too large: a call forwarded to another node or process carries at most %d bytes", peer.MaxBody)
		if w.Code != http.StatusRequestEntityTooLarge || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("declared %d: %d %q, want 413 %q", declared, w.Code, w.Body.String(), want)
		}
		if body.read > peer.MaxBody+1 {
			t.Errorf("declared %d: read %d bytes of an oversized body", declared, body.read)
		}
	}
}

// TestForwardFailureKeepsItsCause: a forward the owner refused, or lost
// mid-call, is answered with the reason, not a bare "owned by another node".
func TestForwardFailureKeepsItsCause(t *testing.T) {
	cases := []struct {
		err    error
		status int
		text   string
	}{
		{&peer.RefusedError{Addr: "127.0.0.1:1", Message: "peer request not authenticated: signature does not match"}, 409,
			"Durable Object Counter/x is owned by another node (forwarding to 127.0.0.1:1 failed: the owner at 127.0.0.1:1 refused the forwarded call: peer request not authenticated: signature does not match)"},
		{&peer.OwnerLostError{Addr: "127.0.0.1:1", Err: io.ErrUnexpectedEOF}, 502,
			"the owner at 127.0.0.1:1 went away during the forwarded call (unexpected EOF): the call may or may not have been applied"},
	}
	for _, c := range cases {
		calls := 0
		w := routedAnswer(httptest.NewRequest("POST", "/counter/x", nil), func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
			return c.err
		}, func() (int, error) { calls++; return 0, ownedByA })
		if w.Code != c.status || strings.TrimSpace(w.Body.String()) != c.text || calls != 1 {
			t.Errorf("%T: %d %q after %d calls, want %d %q after one", c.err, w.Code, w.Body.String(), calls, c.status, c.text)
		}
	}
}

// TestNotAppliedWaitsForTheHandover: while the owner answers that it did
// not run the call (shutting down; signed for an incarnation it no longer
// is; never reached), the call is looked up again — each time with the same
// body — and runs here once the cell comes free, or goes to the new owner.
func TestNotAppliedWaitsForTheHandover(t *testing.T) {
	notRun := []error{
		&peer.NotAppliedError{Addr: "127.0.0.1:1", Reason: "it answered 503 Service Unavailable (closing): cell: runtime is closed"},
		&peer.NotAppliedError{Addr: "127.0.0.1:1", Reason: "it answered 401 Unauthorized (misdirected): ..."},
		&peer.NotAppliedError{Addr: "127.0.0.1:1", Reason: "the request was not sent: connection refused"},
	}
	// Freed: the third look finds the cell free and runs it here.
	var bodies []string
	calls := 0
	r := httptest.NewRequest("POST", "/room/x", strings.NewReader("hello"))
	w := routedAnswer(r, func(_ context.Context, to *lease.CellOwnedElsewhereError, _ http.ResponseWriter, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		return notRun[len(bodies)-1]
	}, func() (int, error) {
		calls++
		if calls <= len(notRun) {
			return 0, ownedByA
		}
		return 42, nil
	})
	if w.Code != 200 || w.Body.String() != "42" || calls != 4 {
		t.Fatalf("%d %q after %d calls, want 200 42 after 4", w.Code, w.Body.String(), calls)
	}
	if strings.Join(bodies, ",") != "hello,hello,hello" {
		t.Fatalf("forwarded bodies %q", bodies)
	}
	// Moved: the second look names another owner, which answers.
	var to []string
	calls = 0
	w = routedAnswer(httptest.NewRequest("POST", "/counter/x", nil), func(_ context.Context, oe *lease.CellOwnedElsewhereError, w http.ResponseWriter, _ *http.Request) error {
		to = append(to, oe.Owner+"@"+oe.Incarnation)
		if oe.Owner == "na" {
			return notRun[0]
		}
		w.WriteHeader(200)
		io.WriteString(w, "from nb")
		return nil
	}, func() (int, error) {
		calls++
		if calls == 1 {
			return 0, ownedByA
		}
		return 0, &lease.CellOwnedElsewhereError{Class: "Counter", ID: "x", Owner: "nb", Addr: "127.0.0.1:2", Incarnation: "i7"}
	})
	if w.Code != 200 || w.Body.String() != "from nb" || strings.Join(to, ",") != "na@i1,nb@i7" {
		t.Fatalf("%d %q, forwarded to %v", w.Code, w.Body.String(), to)
	}
	// A call that may have run is never retried.
	calls = 0
	w = routedAnswer(httptest.NewRequest("POST", "/counter/x", nil), func(context.Context, *lease.CellOwnedElsewhereError, http.ResponseWriter, *http.Request) error {
		return &peer.OwnerLostError{Addr: "127.0.0.1:1", Err: errors.New("reset")}
	}, func() (int, error) { calls++; return 0, ownedByA })
	if w.Code != 502 || calls != 1 {
		t.Fatalf("owner lost: %d after %d calls", w.Code, calls)
	}
}
