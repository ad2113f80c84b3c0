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
)

// A streamed answer (HeaderStreamed) goes through as it comes — its first
// chunk reaches the caller while the owner still writes — without the
// marker, and lasts past Forwarder.Timeout; a whole answer that takes
// longer than the timeout is a lost owner; a stream the owner breaks
// midway returns *OwnerLostError after the part that came.
func TestForwardStreamsThrough(t *testing.T) {
	more, broke, late := make(chan struct{}), make(chan struct{}), make(chan struct{})
	rc := &Receiver{Key: testKey, Node: "node_a", Incarnation: "inc-1"}
	owner := httptest.NewServer(rc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-whole":
			<-late
			io.WriteString(w, "late")
			return
		case "/broken":
			w.Header().Set(HeaderStreamed, "1")
			io.WriteString(w, "part\n")
			w.(http.Flusher).Flush()
			<-broke
			panic(http.ErrAbortHandler)
		}
		w.Header().Set(HeaderStreamed, "1")
		w.Header().Set("X-Owner", "yes")
		io.WriteString(w, "one\n")
		w.(http.Flusher).Flush()
		<-more
		io.WriteString(w, "two\n")
	})))
	defer owner.Close()
	to := Target{Node: "node_a", Incarnation: "inc-1", Addr: strings.TrimPrefix(owner.URL, "http://")}
	const timeout = 100 * time.Millisecond
	f := &Forwarder{Key: testKey, Self: "node_b", Timeout: timeout}

	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, w: pw}
	done := make(chan error, 1)
	go func() {
		err := f.Forward(context.Background(), to, w, httptest.NewRequest("GET", "/stream", nil))
		pw.CloseWithError(err)
		done <- err
	}()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "one\n" {
		t.Fatalf("first chunk %q, %v (the owner still writes: it must stream)", buf, err)
	}
	time.Sleep(3 * timeout) // past the timeout: a stream is not cut by it
	close(more)
	rest, err := io.ReadAll(pr)
	if err != nil || string(rest) != "two\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.header.Get(HeaderStreamed) != "" || w.header.Get("X-Owner") != "yes" {
		t.Fatalf("copied headers %v", w.header)
	}

	// The owner answers whole (no marker), and after the timeout.
	slow := make(chan error, 1)
	go func() {
		slow <- f.Forward(context.Background(), to, httptest.NewRecorder(), httptest.NewRequest("GET", "/slow-whole", nil))
	}()
	var lost *OwnerLostError
	err = <-slow
	close(late)
	if !errors.As(err, &lost) {
		t.Fatalf("a whole answer past the timeout: %v, want *OwnerLostError", err)
	}

	rec := httptest.NewRecorder()
	close(broke)
	err = f.Forward(context.Background(), to, rec, httptest.NewRequest("GET", "/broken", nil))
	if !errors.As(err, &lost) || rec.Body.String() != "part\n" {
		t.Fatalf("a stream broken midway: %v after %q, want *OwnerLostError after %q", err, rec.Body.String(), "part\n")
	}
}

// pipeWriter is an http.ResponseWriter and Flusher writing to a pipe.
type pipeWriter struct {
	header http.Header
	w      io.Writer
}

func (p *pipeWriter) Header() http.Header         { return p.header }
func (p *pipeWriter) WriteHeader(int)             {}
func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeWriter) Flush()                      {}
