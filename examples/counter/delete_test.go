package counter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestDeleteResetsValueAndAlarm: DELETE /counter/<name> is deleteAll seen
// from outside: the value reads 0 and the alarm is gone.
func TestDeleteResetsValueAndAlarm(t *testing.T) {
	rt, err := cell.New(cell.Options{ScriptName: "cellb-example", Driver: wasm.New(), DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	app, err := Register(rt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	app.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	do(t, "POST", hs.URL+"/counter/d")
	do(t, "POST", hs.URL+"/counter/d")
	if resp, body := do(t, "POST", hs.URL+"/counter/d/alarm?in=3600000"); resp.StatusCode != 200 {
		t.Fatalf("set the alarm: %d %q", resp.StatusCode, body)
	}
	if resp, body := do(t, "DELETE", hs.URL+"/counter/d"); resp.StatusCode != 200 || strings.TrimSpace(body) != `{"value":0}` {
		t.Fatalf("DELETE: %d %q, want 200 {\"value\":0}", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", hs.URL+"/counter/d"); resp.StatusCode != 200 || strings.TrimSpace(body) != `{"value":0}` {
		t.Fatalf("GET after DELETE: %d %q", resp.StatusCode, body)
	}
	if err := cell.Inspect(context.Background(), app.NS.Get(app.NS.IDFromName("d")), func(ctx context.Context, st *cell.State) error {
		if _, set, err := st.GetAlarm(ctx); err != nil || set {
			t.Errorf("after DELETE the alarm is set=%v (%v)", set, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "POST", hs.URL+"/counter/d"); strings.TrimSpace(body) != `{"value":1}` {
		t.Fatalf("POST after DELETE: %d %q, want 1", resp.StatusCode, body)
	}
}
