package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/httperr"
)

// failingDriver fails every Open with err: activation never gets a
// database.
type failingDriver struct{ err error }

func (failingDriver) Name() string                      { return "failing" }
func (failingDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (d failingDriver) Open(context.Context, driver.Config) (driver.Conn, error) {
	return nil, d.err
}

// newTestHost starts a host with routes like the counter's: POST
// /counter/{name} and /counter/{name}/alarm answer the name after reading
// the body, /obj/{name} is a cell stub.
func newTestHost(t *testing.T, drv driver.Driver, ln net.Listener, limits Limits) *Host {
	t.Helper()
	h, err := New(context.Background(), Config{Driver: drv, DataDir: t.TempDir(), Listener: ln, Limits: limits, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Classes: func(s *Setup) error {
			answer := func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					httperr.Write(w, err)
					return
				}
				io.WriteString(w, "cell "+r.PathValue("name"))
			}
			s.Mux.HandleFunc("POST /counter/{name}", answer)
			s.Mux.HandleFunc("POST /counter/{name}/alarm", answer)
			ns, err := cell.Register(s.Runtime, "Obj", func(context.Context, *cell.State) (obj, error) { return obj{}, nil })
			if err != nil {
				return err
			}
			s.Mux.HandleFunc("GET /obj/{name}", func(w http.ResponseWriter, r *http.Request) {
				ns.Get(ns.IDFromName(r.PathValue("name"))).ServeHTTP(w, r)
			})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// TestEmptyOrDotSegmentsAre400: a path with an empty or dot segment is
// answered 400 by Handler, never redirected by the mux to another cell's
// URL (307 to /counter/alarm for /counter//alarm).
func TestEmptyOrDotSegmentsAre400(t *testing.T) {
	h := newTestHost(t, noDriver{}, nil, Limits{})
	for _, path := range []string{"/counter//alarm", "/counter/./x", "/counter/../x", "/counter/%2e%2e", "/counter/%2E/alarm", "/counter/x/..", "//counter/x", "/counter/"} {
		w := httptest.NewRecorder()
		h.Handler().ServeHTTP(w, httptest.NewRequest("POST", path, nil))
		if w.Code != http.StatusBadRequest || !strings.HasPrefix(w.Body.String(), "bad path ") || w.Header().Get("Location") != "" {
			t.Errorf("POST %s: %d %q (Location %q), want 400 naming the bad path", path, w.Code, w.Body.String(), w.Header().Get("Location"))
		}
	}
	for path, want := range map[string]string{"/counter/a": "cell a", "/counter/a.b": "cell a.b", "/counter/..a/alarm": "cell ..a", "/counter/%2e": ""} {
		w := httptest.NewRecorder()
		h.Handler().ServeHTTP(w, httptest.NewRequest("POST", path, nil))
		if want == "" {
			continue
		}
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("POST %s: %d %q, want 200 %q", path, w.Code, w.Body.String(), want)
		}
	}
}

// TestBodyNeverSentIsCutOff: a client that sends its headers and never the
// body it announced is disconnected after the configured read timeout,
// instead of holding the connection (and a goroutine) for good.
func TestBodyNeverSentIsCutOff(t *testing.T) {
	ln := listen(t)
	newTestHost(t, noDriver{}, ln, Limits{ReadHeaderTimeout: 50 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /counter/a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	// Not a timing assertion: a guard, far beyond the configured timeout,
	// so that a server that never hangs up fails instead of hanging.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept the connection of a body that never came open")
	}
}

// TestServersHaveTheLimits: every server the host starts (public, local
// socket) carries the configured limits; zero fields take the defaults.
func TestServersHaveTheLimits(t *testing.T) {
	lim := Limits{ReadHeaderTimeout: 1 * time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: 3 * time.Second, MaxHeaderBytes: 4096}
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Listener: listen(t), Ownership: SingleHost, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if h.local == nil {
		t.Skip("no local socket here")
	}
	for name, s := range map[string]*http.Server{"public": h.public, "local": h.local} {
		if s.ReadHeaderTimeout != lim.ReadHeaderTimeout || s.ReadTimeout != lim.ReadTimeout || s.IdleTimeout != lim.IdleTimeout || s.MaxHeaderBytes != lim.MaxHeaderBytes {
			t.Errorf("%s server: %v %v %v %d, want %+v", name, s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout, s.MaxHeaderBytes, lim)
		}
	}
	if got := h.limits.MaxBodyBytes; got != DefaultLimits.MaxBodyBytes {
		t.Errorf("MaxBodyBytes %d, want the default %d", got, DefaultLimits.MaxBodyBytes)
	}
	d := Limits{}.withDefaults()
	if d != DefaultLimits || d.ReadTimeout == 0 || d.IdleTimeout == 0 || d.MaxHeaderBytes == 0 {
		t.Errorf("defaults %+v", d)
	}
}

// statusOf sends a raw request and returns the response's status code.
func statusOf(t *testing.T, addr, raw string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(conn, raw) // the server may answer before it has read it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHeaderAndBodyLimits: headers over the limit are answered 431 (2 MiB,
// and 100 KiB, which net/http's own 1 MiB limit would let through); a body
// over MaxBodyBytes is answered 413, whether its length is declared or it
// is streamed.
func TestHeaderAndBodyLimits(t *testing.T) {
	ln := listen(t)
	newTestHost(t, noDriver{}, ln, Limits{})
	addr := ln.Addr().String()
	for _, size := range []int{2 << 20, 100 << 10} {
		raw := "GET /counter/a HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", size) + "\r\n\r\n"
		if got := statusOf(t, addr, raw); got != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%d bytes of headers: %d, want 431", size, got)
		}
	}
	big := strings.Repeat("b", int(DefaultLimits.MaxBodyBytes)+1)
	if got := statusOf(t, addr, fmt.Sprintf("POST /counter/a HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(big), big)); got != http.StatusRequestEntityTooLarge {
		t.Errorf("declared body over the limit: %d, want 413", got)
	}
	chunked := fmt.Sprintf("POST /counter/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big)
	if got := statusOf(t, addr, chunked); got != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed body over the limit: %d, want 413", got)
	}
	if got := statusOf(t, addr, "POST /counter/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"); got != 200 {
		t.Errorf("small body: %d, want 200", got)
	}
}

// TestFullDiskAndActivationAre503: a cell whose database cannot be opened
// because the disk is full is answered 503 "database or disk is full"
// with Retry-After; any other activation failure 503 with Retry-After too
// (the next call tries again), not 500.
func TestFullDiskAndActivationAre503(t *testing.T) {
	for _, c := range []struct {
		name, body, after string
		err               error
	}{
		{"ENOSPC", "database or disk is full\n", "30", &os.PathError{Op: "open", Path: "/data/cells/x.db", Err: syscall.ENOSPC}},
		{"SQLITE_FULL", "database or disk is full\n", "30", &driver.SQLiteError{Code: driver.CodeFull, ExtendedCode: driver.CodeFull, Msg: "database or disk is full"}},
		{"activation", "", "1", errors.New("bucket unavailable")},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHost(t, failingDriver{c.err}, nil, Limits{})
			w := httptest.NewRecorder()
			h.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/obj/a", nil))
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != c.after {
				t.Fatalf("%d %q Retry-After %q, want 503 with Retry-After %s", w.Code, w.Body.String(), w.Header().Get("Retry-After"), c.after)
			}
			if c.body != "" && w.Body.String() != c.body {
				t.Fatalf("body %q, want %q", w.Body.String(), c.body)
			}
			if c.body == "" && !strings.Contains(w.Body.String(), "activation failed: ") {
				t.Fatalf("body %q does not say activation failed", w.Body.String())
			}
		})
	}
}
