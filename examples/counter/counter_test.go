package counter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/drivers/wasm"
)

func serve(t *testing.T, o Options) *httptest.Server {
	rt, err := cell.New(cell.Options{ScriptName: "cellb-example", Driver: wasm.New(), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	app, err := Register(rt, o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func do(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestContract: the answers tools outside the project rely on.
func TestContract(t *testing.T) {
	hs := serve(t, Options{})
	for i, want := range []string{`{"value":1}`, `{"value":2}`} {
		resp, body := do(t, "POST", hs.URL+"/counter/c")
		if resp.StatusCode != 200 || strings.TrimSpace(body) != want {
			t.Fatalf("POST %d: %d %q, want %s", i, resp.StatusCode, body, want)
		}
		if resp.Header.Get("X-Cellb-Node") != "local" || resp.Header.Get("X-Cellb-Epoch") != "0" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", resp.Header)
		}
	}
	if resp, body := do(t, "GET", hs.URL+"/counter/c"); resp.StatusCode != 200 || strings.TrimSpace(body) != `{"value":2}` {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	resp, body := do(t, "POST", hs.URL+"/counter/c/alarm?in=0")
	var out struct{ Value, Alarm int64 }
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Value != 2 || out.Alarm == 0 {
		t.Fatalf("alarm: %d %q", resp.StatusCode, body)
	}
	// The alarm adds 1000.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := do(t, "GET", hs.URL+"/counter/c")
		if strings.TrimSpace(body) == `{"value":1002}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alarm never fired: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/counter/c/alarm?in=x", `in must be a whole number of milliseconds from 0 to one year, not "x"`},
		{"POST", "/counter/c/alarm?in=-1", `in must be a whole number of milliseconds from 0 to one year, not "-1"`},
		{"GET", "/counter/" + strings.Repeat("n", MaxNameLen+1), "counter name must be 1 to 256 bytes"},
	} {
		resp, body := do(t, c.method, hs.URL+c.path)
		if resp.StatusCode != 400 || strings.TrimSpace(body) != c.body {
			t.Errorf("%s %s: %d %q, want 400 %q", c.method, c.path, resp.StatusCode, body, c.body)
		}
	}
}

// refusing is a lease under which another node owns every cell.
type refusing struct{}

func (refusing) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	return nil, &lease.CellOwnedElsewhereError{Class: Class, ID: "x", Owner: "n2"}
}

// TestOwnedElsewhereIs409: a call the runtime refuses because another node
// owns the cell is answered as httperr maps it (409 with the refusal). (On a
// core/host node the request would have gone to the owner instead.)
func TestOwnedElsewhereIs409(t *testing.T) {
	rt, err := cell.New(cell.Options{ScriptName: "cellb-example", Driver: wasm.New(), DataDir: t.TempDir(), Lease: refusing{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	app, err := Register(rt, Options{Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	want := (&lease.CellOwnedElsewhereError{Class: Class, ID: "x", Owner: "n2"}).Error()
	if resp, body := do(t, "GET", hs.URL+"/counter/refused"); resp.StatusCode != 409 || strings.TrimSpace(body) != want {
		t.Errorf("refused: %d %q", resp.StatusCode, body)
	}
}
