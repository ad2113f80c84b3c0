package health_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/health"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// noDriver opens nothing: these nodes serve no cell.
type noDriver struct{}

func (noDriver) Name() string                      { return "none" }
func (noDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (noDriver) Open(context.Context, driver.Config) (driver.Conn, error) {
	return nil, errors.New("noDriver opens nothing")
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

func wantStatus(t *testing.T, a *health.Admin, path string, status int, body string) {
	t.Helper()
	code, got := get(t, a, path)
	if code != status || !strings.Contains(got, body) {
		t.Fatalf("GET %s: %d %q, want %d with %q", path, code, got, status, body)
	}
}

// TestReadyzFollowsTheNode: /healthz answers 200 throughout; /readyz
// answers 503 until the node is handed over (host.New returned), 200
// while it serves, and 503 once Close has begun.
func TestReadyzFollowsTheNode(t *testing.T) {
	a := health.New(nil)
	wantStatus(t, a, "/healthz", 200, "ok")
	wantStatus(t, a, "/readyz", 503, "not ready: starting")
	wantStatus(t, a, "/metrics", 404, "")

	h, err := host.New(context.Background(), host.Config{Driver: noDriver{}, DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a, "/readyz", 503, "not ready: starting") // not handed over yet
	a.SetReady(h)
	wantStatus(t, a, "/readyz", 200, "ready")
	wantStatus(t, a, "/healthz", 200, "ok")
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a, "/readyz", 503, "not ready: host: shutting down")
	wantStatus(t, a, "/healthz", 200, "ok")
}

// TestReadyzAfterSelfFence: a fleet node whose lease renewals fail past
// its fence deadline (driven by the fake clock) self-fences, and /readyz
// answers 503 with the reason from then on.
func TestReadyzAfterSelfFence(t *testing.T) {
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	h, err := host.New(context.Background(), host.Config{
		Driver: noDriver{}, DataDir: t.TempDir(), Bucket: fs, Ownership: host.Fleet,
		Fleet: host.FleetConfig{Node: "node_ready"}, Clock: clk, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	a := health.New(http.NotFoundHandler())
	a.SetReady(h)
	wantStatus(t, a, "/readyz", 200, "ready")

	// Every renewal fails from now on; past the deadline the node fences.
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: layout.NodeKey("node_ready"), Fault: faultstore.Fail, Times: -1})
	clk.Advance(fleet.DefaultTTL)
	<-h.Fenced()
	wantStatus(t, a, "/readyz", 503, "self-fenced")
	wantStatus(t, a, "/healthz", 200, "ok")
}

// TestMetricsEndpoint: /metrics is the handler the program gave.
func TestMetricsEndpoint(t *testing.T) {
	a := health.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x_total 1\n") }))
	wantStatus(t, a, "/metrics", 200, "x_total 1")
	if code, _ := get(t, a, "/other"); code != 404 {
		t.Fatalf("GET /other: %d, want 404", code)
	}
}
