package httpbuf

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// A Stream that is never flushed and stays under its limit is one whole
// response; no head is released.
func TestStreamUnflushedIsWhole(t *testing.T) {
	s := NewStream()
	s.Limit, s.Sniff = 16, true
	s.Header().Set("X-A", "1")
	s.WriteHeader(201)
	io.WriteString(s, "<html>hi")
	s.Finish(nil)
	select {
	case <-s.Head():
		t.Fatal("head released without a flush")
	default:
	}
	resp := s.Response(httptest.NewRequest("GET", "/", nil))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(b) != "<html>hi" || resp.ContentLength != 8 ||
		resp.Header.Get("X-A") != "1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %q %d %v", resp.StatusCode, b, resp.ContentLength, resp.Header)
	}
}

// Writes past the limit go out through Gate, in order, without waiting for
// Finish; the buffer never holds more than the limit; Finish sends the
// rest and ends the body.
func TestStreamChunksThroughGate(t *testing.T) {
	s := NewStream()
	s.Limit = 4
	var gated int
	s.Gate = func(send func() error) error { gated++; return send() }
	got := make(chan string)
	go func() {
		<-s.Head()
		b, err := io.ReadAll(s.StreamResponse(nil).Body)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	}()
	for _, w := range []string{"ab", "cd", "e", "fghijk", "l"} {
		if _, err := io.WriteString(s, w); err != nil {
			t.Fatal(err)
		}
		if s.buf.Len() > s.Limit {
			t.Fatalf("buffered %d bytes, limit %d", s.buf.Len(), s.Limit)
		}
	}
	s.Finish(nil)
	if b := <-got; b != "abcdefghijkl" {
		t.Fatalf("body %q", b)
	}
	if gated == 0 {
		t.Fatal("no chunk went through the gate")
	}
}

// A gate that fails ends a started body with its error at once, and every
// later write fails; one that fails before the start leaves Err set.
func TestStreamGateFailure(t *testing.T) {
	boom := errors.New("boom")
	s := NewStream()
	fail := false
	s.Gate = func(send func() error) error {
		if fail {
			return boom
		}
		return send()
	}
	read := make(chan error, 1)
	go func() {
		<-s.Head()
		_, err := io.ReadAll(s.StreamResponse(nil).Body)
		read <- err
	}()
	io.WriteString(s, "one")
	s.Flush()
	fail = true
	io.WriteString(s, "two")
	s.Flush()
	if err := <-read; !errors.Is(err, boom) {
		t.Fatalf("body ended with %v, want boom", err)
	}
	if _, err := io.WriteString(s, "three"); !errors.Is(err, boom) {
		t.Fatalf("write after the failure: %v", err)
	}

	u := NewStream()
	u.Gate = func(func() error) error { return boom }
	io.WriteString(u, "x")
	u.Flush()
	if !errors.Is(u.Err(), boom) || u.Started() {
		t.Fatalf("Err %v, started %v", u.Err(), u.Started())
	}
}
