package peer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

func TestSignVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.UnixMilli(1_800_000_000_000)
	req := httptest.NewRequest("POST", "/counter/a?x=1", strings.NewReader("body"))
	if err := Sign(req, key, now); err != nil {
		t.Fatal(err)
	}
	if err := Verify(req, key, now.Add(time.Second)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if b, _ := io.ReadAll(req.Body); string(b) != "body" {
		t.Fatal("body lost")
	}
	tamper := func(f func(r *http.Request)) error {
		r := httptest.NewRequest("POST", "/counter/a?x=1", strings.NewReader("body"))
		Sign(r, key, now)
		f(r)
		return Verify(r, key, now)
	}
	cases := map[string]func(r *http.Request){
		"path":      func(r *http.Request) { r.URL.Path = "/counter/b" },
		"query":     func(r *http.Request) { r.URL.RawQuery = "x=2" },
		"method":    func(r *http.Request) { r.Method = "GET" },
		"body":      func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader("bodz")) },
		"unsigned":  func(r *http.Request) { r.Header.Del(HeaderSignature) },
		"timestamp": func(r *http.Request) { r.Header.Set(HeaderTime, "1") },
	}
	for name, f := range cases {
		if err := tamper(f); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s tampered: %v", name, err)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	Sign(r, key, now)
	if err := Verify(r, []byte("another key, 32 bytes long......"), now); !errors.Is(err, ErrUnauthenticated) {
		t.Error("another fleet's key verified")
	}
}

func TestForwardAndRequire(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	owner := httptest.NewServer(Require(key, time.Now, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Owner", "yes")
		w.WriteHeader(201)
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(b))
	})))
	defer owner.Close()
	addr := strings.TrimPrefix(owner.URL, "http://")
	// Unauthenticated calls are refused.
	resp, err := http.Post(owner.URL+"/counter/x", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated call got %d", resp.StatusCode)
	}
	// A replayed signed request is refused.
	signed, _ := http.NewRequest("POST", owner.URL+"/counter/x", strings.NewReader("hi"))
	Sign(signed, key, time.Now())
	replay := signed.Clone(context.Background())
	replay.Body = io.NopCloser(strings.NewReader("hi"))
	for i, want := range []int{201, http.StatusUnauthorized} {
		r := signed
		if i == 1 {
			r = replay
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("attempt %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	f := &Forwarder{Key: key, Self: "node_a"}
	rec := httptest.NewRecorder()
	in := httptest.NewRequest("POST", "/counter/x?in=5", strings.NewReader("hi"))
	if err := f.Forward(context.Background(), addr, rec, in); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Body.String() != "POST /counter/x?in=5 hi" || rec.Header().Get("X-Owner") != "yes" {
		t.Fatalf("forwarded answer %d %q", rec.Code, rec.Body.String())
	}
	again := httptest.NewRequest("POST", "/counter/x", nil)
	again.Header.Set(HeaderForwarded, "node_b")
	if err := f.Forward(context.Background(), addr, httptest.NewRecorder(), again); !errors.Is(err, ErrAlreadyForwarded) {
		t.Fatalf("a forwarded call was forwarded again: %v", err)
	}
}
