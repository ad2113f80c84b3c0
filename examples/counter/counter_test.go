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

// TestRouteDecides: every call goes through the Route hook, which may have
// it answered elsewhere; an error it returns is answered as httperr maps it.
func TestRouteDecides(t *testing.T) {
	owned := &lease.CellOwnedElsewhereError{Class: Class, ID: "x", Owner: "n2"}
	hs := serve(t, Options{Node: "n1", Route: func(w http.ResponseWriter, r *http.Request, body []byte, call func() error) (bool, error) {
		switch r.PathValue("name") {
		case "elsewhere":
			w.Write([]byte("answered by the owner\n"))
			return true, nil
		case "refused":
			return false, owned
		}
		return false, call()
	}})
	if resp, body := do(t, "POST", hs.URL+"/counter/here"); resp.StatusCode != 200 || resp.Header.Get("X-Cellb-Node") != "n1" || strings.TrimSpace(body) != `{"value":1}` {
		t.Errorf("here: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if resp, body := do(t, "POST", hs.URL+"/counter/elsewhere"); resp.StatusCode != 200 || body != "answered by the owner\n" {
		t.Errorf("elsewhere: %d %q", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", hs.URL+"/counter/refused"); resp.StatusCode != 409 || strings.TrimSpace(body) != owned.Error() {
		t.Errorf("refused: %d %q", resp.StatusCode, body)
	}
}
