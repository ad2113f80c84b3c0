package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestKeyIsSharedThroughTheBucket(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	k1, err := LoadOrCreateKey(ctx, s, nil)
	if err != nil || len(k1) != 32 {
		t.Fatalf("%x %v", k1, err)
	}
	k2, err := LoadOrCreateKey(ctx, s, nil)
	if err != nil || string(k1) != string(k2) {
		t.Fatal("a second node got a different key")
	}
	for _, bad := range []string{`{"version":2,"key":"` + strings.Repeat("a", 64) + `"}`, `{"version":1,"key":"ABC"}`, `{"version":1,"key":"` + strings.Repeat("a", 64) + `","x":1}`, `nope`} {
		s2 := memstore.New()
		s2.Put(ctx, KeyRecord, []byte(bad), store.PutOptions{})
		if _, err := LoadOrCreateKey(ctx, s2, nil); !errors.Is(err, ErrBadKeyRecord) {
			t.Errorf("%s: %v", bad, err)
		}
		if obj, _ := s2.Get(ctx, KeyRecord); string(obj.Data) != bad {
			t.Error("a malformed record was overwritten")
		}
	}
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

var nodeA = Target{Node: "node_a", Incarnation: "inc-1", Addr: "a.invalid:1"}

// signed is a request for to, signed at now, with body.
func signed(t *testing.T, method, uri, body string, to Target, now time.Time) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, uri, nil)
	if err := Sign(r, []byte(body), testKey, to, now); err != nil {
		t.Fatal(err)
	}
	return r
}

// clone copies a signed request as an eavesdropper would resend it.
func clone(r *http.Request, body string) *http.Request {
	c := r.Clone(context.Background())
	c.Body = io.NopCloser(strings.NewReader(body))
	c.ContentLength = int64(len(body))
	return c
}

func receiver(to Target, clk clock.Clock) *Receiver {
	return &Receiver{Key: testKey, Node: to.Node, Incarnation: to.Incarnation, Clock: clk}
}

func TestSignVerify(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	clk := clock.NewFake(now.Add(time.Second))
	r := signed(t, "POST", "/counter/a?x=1", "body", nodeA, now)
	if err := receiver(nodeA, clk).Admit(r); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if b, _ := io.ReadAll(r.Body); string(b) != "body" {
		t.Fatal("body lost")
	}
	cases := map[string]func(r *http.Request){
		"path":         func(r *http.Request) { r.URL.Path = "/counter/b" },
		"query":        func(r *http.Request) { r.URL.RawQuery = "x=2" },
		"method":       func(r *http.Request) { r.Method = "GET" },
		"body":         func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader("bodz")) },
		"unsigned":     func(r *http.Request) { r.Header.Del(HeaderSignature) },
		"timestamp":    func(r *http.Request) { r.Header.Set(HeaderTime, "1") },
		"node header":  func(r *http.Request) { r.Header.Set(HeaderNode, "node_b") },
		"incarnation":  func(r *http.Request) { r.Header.Set(HeaderIncarnation, "inc-2") },
		"forwarded-by": func(r *http.Request) { r.Header.Set(HeaderForwarded, "node_z") },
		"body length":  func(r *http.Request) { r.Header.Set(HeaderBodyLength, "5") },
		"body hash":    func(r *http.Request) { r.Header.Set(HeaderBodySHA256, strings.Repeat("0", 64)) },
		"no node":      func(r *http.Request) { r.Header.Del(HeaderNode) },
	}
	for name, f := range cases {
		r := signed(t, "POST", "/counter/a?x=1", "body", nodeA, now)
		f(r)
		if err := receiver(nodeA, clk).Admit(r); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s tampered: %v", name, err)
		}
	}
	r = signed(t, "GET", "/", "", nodeA, now)
	other := &Receiver{Key: []byte("another key, 32 bytes long......"), Node: nodeA.Node, Incarnation: nodeA.Incarnation, Clock: clk}
	if err := other.Admit(r); !errors.Is(err, ErrUnauthenticated) {
		t.Error("another fleet's key verified")
	}
}

// TestReplayIsRefusedEverywhere: a captured request runs once. Resent to the
// same node it is a replay; sent to another node, or to the same node after
// it restarted (a new incarnation, with no memory of the nonce), it is signed
// for someone else; resent after the window it is stale.
func TestReplayIsRefusedEverywhere(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	clk := clock.NewFake(now)
	a := receiver(nodeA, clk)
	orig := signed(t, "POST", "/counter/x", "hi", nodeA, now)
	capture := clone(orig, "hi")
	if err := a.Admit(orig); err != nil {
		t.Fatal(err)
	}
	want := func(name string, rc *Receiver, substr string, misdirected bool) {
		t.Helper()
		rec := httptest.NewRecorder()
		ran := false
		rc.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(rec, clone(capture, "hi"))
		if ran || rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), substr) {
			t.Errorf("%s: ran %v, %d %q; want 401 with %q", name, ran, rec.Code, rec.Body.String(), substr)
		}
		if got := rec.Header().Get(HeaderNotApplied) != ""; got != misdirected {
			t.Errorf("%s: %s set %v, want %v", name, HeaderNotApplied, got, misdirected)
		}
	}
	want("the same node", a, "replayed request (nonce already seen)", false)
	want("another node", receiver(Target{Node: "node_b", Incarnation: "inc-1"}, clk), `signed for node "node_a", this is node "node_b"`, true)
	want("the same node restarted", receiver(Target{Node: "node_a", Incarnation: "inc-2"}, clk), `signed for another incarnation of node "node_a" (it restarted since)`, true)
	clk.Advance(MaxSkew + time.Second)
	want("the same node, later", a, "away from this node's clock", false)
	// The nonce memory forgets what the window refuses anyway.
	clk.Advance(2 * MaxSkew)
	a.remember("other", clk.Now())
	if _, kept := a.seen[orig.Header.Get(HeaderNonce)]; kept || len(a.order) != 1 {
		t.Errorf("expired nonces are kept: %d", len(a.order))
	}
}

// countingReader is a body of size bytes that counts what was read of it.
type countingReader struct {
	read, size int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	if left := c.size - c.read; n > left {
		n = left
	}
	c.read += n
	return int(n), nil
}

// TestBodiesAreNotReadBeforeAuthentication: a huge body behind a missing or
// bad signature is refused with 401 without reading a byte of it; a signed
// body over the limit gets 413, also unread; a signed body that differs from
// its hash is read only up to the signed length.
func TestBodiesAreNotReadBeforeAuthentication(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	clk := clock.NewFake(now)
	const huge = 1 << 40
	withBody := func(r *http.Request, size int64) *countingReader {
		c := &countingReader{size: size}
		r.Body = io.NopCloser(c)
		r.ContentLength = size
		return c
	}
	cases := []struct {
		name   string
		req    func() *http.Request
		status int
		text   string
	}{
		{"unsigned", func() *http.Request { return httptest.NewRequest("POST", "/counter/x", nil) }, 401, "peer request not authenticated: missing signature headers"},
		{"bad signature", func() *http.Request {
			r := signed(t, "POST", "/counter/x", "small", nodeA, now)
			r.Header.Set(HeaderBodyLength, strconv.Itoa(huge))
			return r
		}, 401, "peer request not authenticated: signature does not match"},
		{"another node", func() *http.Request { return signed(t, "POST", "/counter/x", "small", Target{Node: "node_b"}, now) }, 401, "signed for node"},
		{"signed over the limit", func() *http.Request {
			r := signed(t, "POST", "/counter/x", string(make([]byte, MaxBody+1)), nodeA, now)
			r.Body = nil
			return r
		}, 413, fmt.Sprintf("request body too large: a call forwarded to another node or process carries at most %d bytes", MaxBody)},
	}
	for _, c := range cases {
		r := c.req()
		body := withBody(r, huge)
		rec := httptest.NewRecorder()
		receiver(nodeA, clk).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Errorf("%s: the handler ran", c.name) })).ServeHTTP(rec, r)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.text) {
			t.Errorf("%s: %d %q, want %d %q", c.name, rec.Code, rec.Body.String(), c.status, c.text)
		}
		if body.read != 0 {
			t.Errorf("%s: %d bytes of the body were read before it was refused", c.name, body.read)
		}
	}
	// Signed for 5 bytes, framed as 5 bytes, but other bytes: read 5, refused.
	r := signed(t, "POST", "/counter/x", "small", nodeA, now)
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader("smalL and more")), 5
	if err := receiver(nodeA, clk).Admit(r); err == nil || !strings.Contains(err.Error(), "body does not match its signed hash") {
		t.Errorf("a body unlike its hash: %v", err)
	}
	// A body framed longer than signed is refused before it is read.
	r = signed(t, "POST", "/counter/x", "small", nodeA, now)
	body := withBody(r, huge)
	if err := receiver(nodeA, clk).Admit(r); !errors.Is(err, ErrUnauthenticated) || body.read != 0 {
		t.Errorf("a body longer than signed: %v, %d bytes read", err, body.read)
	}
}

// TestReplayBoundsTheBody: the public port reads at most MaxBody+1 bytes of
// a body it would forward, and refuses a larger one.
func TestReplayBoundsTheBody(t *testing.T) {
	for _, declared := range []int64{-1, 200 << 20} {
		r := httptest.NewRequest("POST", "/counter/x", nil)
		c := &countingReader{size: 200 << 20}
		r.Body, r.ContentLength = io.NopCloser(c), declared
		_, err := Replay(context.Background(), r, "http://owner", "node_a")
		var big *BodyTooLargeError
		if !errors.As(err, &big) || big.Limit != MaxBody {
			t.Fatalf("declared %d: %v, want a BodyTooLargeError", declared, err)
		}
		if c.read > MaxBody+1 {
			t.Fatalf("declared %d: read %d bytes of a body over the limit", declared, c.read)
		}
	}
}

func TestForwardAndReceive(t *testing.T) {
	rc := &Receiver{Key: testKey, Node: "node_a", Incarnation: "inc-1"}
	owner := httptest.NewServer(rc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/closing":
			w.Header().Set(HeaderNotApplied, "closing")
			http.Error(w, "closing", http.StatusServiceUnavailable)
			return
		case "/hang-up":
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.Header().Set("X-Owner", "yes")
		w.WriteHeader(201)
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(b)+" from "+r.Header.Get(HeaderForwarded))
	})))
	defer owner.Close()
	to := Target{Node: "node_a", Incarnation: "inc-1", Addr: strings.TrimPrefix(owner.URL, "http://")}
	// Unauthenticated calls are refused.
	resp, err := http.Post(owner.URL+"/counter/x", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated call got %d", resp.StatusCode)
	}
	f := &Forwarder{Key: testKey, Self: "node_b"}
	rec := httptest.NewRecorder()
	in := httptest.NewRequest("POST", "/counter/x?in=5", strings.NewReader("hi"))
	if err := f.Forward(context.Background(), to, rec, in); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Body.String() != "POST /counter/x?in=5 hi from node_b" || rec.Header().Get("X-Owner") != "yes" {
		t.Fatalf("forwarded answer %d %q", rec.Code, rec.Body.String())
	}
	again := httptest.NewRequest("POST", "/counter/x", nil)
	again.Header.Set(HeaderForwarded, "node_c")
	if err := f.Forward(context.Background(), to, httptest.NewRecorder(), again); !errors.Is(err, ErrAlreadyForwarded) {
		t.Fatalf("a forwarded call was forwarded again: %v", err)
	}
	forward := func(path string, to Target, body io.Reader) (*httptest.ResponseRecorder, error) {
		rec := httptest.NewRecorder()
		return rec, f.Forward(context.Background(), to, rec, httptest.NewRequest("POST", path, body))
	}
	// Refusals before running are NotApplied, with the owner's reason.
	stale := to
	stale.Incarnation = "inc-0"
	for name, c := range map[string]struct {
		path string
		to   Target
		text string
	}{
		"closing":           {"/closing", to, "it answered 503 Service Unavailable (closing): closing"},
		"stale incarnation": {"/counter/x", stale, "(misdirected): peer request not authenticated: signed for another incarnation"},
		"unreachable":       {"/counter/x", Target{Node: "node_a", Incarnation: "inc-1", Addr: "127.0.0.1:1"}, "the request was not sent"},
	} {
		rec, err := forward(c.path, c.to, nil)
		var na *NotAppliedError
		if !errors.As(err, &na) || !errors.Is(err, ErrNotApplied) || !strings.Contains(err.Error(), c.text) || rec.Code != 200 || rec.Body.Len() != 0 {
			t.Errorf("%s: %v (wrote %d %q), want a NotAppliedError with %q", name, err, rec.Code, rec.Body.String(), c.text)
		}
	}
	// Another key: refused, not applied, not copied to the caller.
	bad := &Forwarder{Key: []byte("another key, 32 bytes long......"), Self: "node_b"}
	rec = httptest.NewRecorder()
	err = bad.Forward(context.Background(), to, rec, httptest.NewRequest("POST", "/counter/x", nil))
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "signature does not match") || rec.Body.Len() != 0 {
		t.Errorf("another key: %v", err)
	}
	// Sent in full, then the owner went away: may have applied.
	_, err = forward("/hang-up", to, nil)
	var lost *OwnerLostError
	if !errors.As(err, &lost) || errors.Is(err, ErrNotApplied) {
		t.Errorf("owner lost mid-call: %v", err)
	}
	// A body over the limit is refused before anything is sent.
	c := &countingReader{size: 200 << 20}
	rec, err = forward("/counter/x", to, c)
	var big *BodyTooLargeError
	if !errors.As(err, &big) || c.read > MaxBody+1 || rec.Body.Len() != 0 {
		t.Errorf("oversized body: %v after reading %d bytes", err, c.read)
	}
}

// writtenThen is a transport that serializes the request (net/http's
// WroteRequest fires once the request is in its buffer, before it reaches
// the connection) and then fails with err, as net/http reports it.
type writtenThen struct{ err error }

func (f writtenThen) RoundTrip(r *http.Request) (*http.Response, error) {
	if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	return nil, f.err
}

// TestForwardNeverReadByTheOwnerWasNotApplied: a request written to a
// kept-alive connection the owner closed while it was idle (a node that
// shuts down closes them) was never read; one that net/http tried again on
// a new connection that could not connect was never written (it tries a
// POST again only then). Either may run elsewhere. Any other failure after
// the request was written may have run.
func TestForwardNeverReadByTheOwnerWasNotApplied(t *testing.T) {
	for _, c := range []struct {
		err        error
		notApplied bool
	}{
		{errors.New("http: server closed idle connection"), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("read: connection reset by peer")}, false},
		{io.EOF, false},
	} {
		f := &Forwarder{Key: testKey, Self: "node_b", Client: &http.Client{Transport: writtenThen{c.err}}}
		err := f.Forward(context.Background(), nodeA, httptest.NewRecorder(), httptest.NewRequest("POST", "/counter/x", nil))
		var lost *OwnerLostError
		if errors.Is(err, ErrNotApplied) != c.notApplied || !c.notApplied && !errors.As(err, &lost) {
			t.Errorf("%v: %v, want not applied: %v", c.err, err, c.notApplied)
		}
	}
}
