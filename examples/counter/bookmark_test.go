package counter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

// serveOn serves the app on a runtime whose log is log (nil: local).
func serveOn(t *testing.T, log durability.Log) *httptest.Server {
	t.Helper()
	return serveWith(t, cell.Options{DataDir: t.TempDir(), Log: log})
}

// serveWith serves the app on a runtime of opts, on the wasm driver.
func serveWith(t *testing.T, opts cell.Options) *httptest.Server {
	t.Helper()
	opts.ScriptName, opts.Driver = "cellb-example", wasm.New()
	rt, err := cell.New(opts)
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
	return hs
}

func bookmarkOf(t *testing.T, url string) string {
	t.Helper()
	resp, body := do(t, "GET", url)
	var out struct {
		Bookmark string `json:"bookmark"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Bookmark == "" {
		t.Fatalf("GET %s: %d %q, want 200 {\"bookmark\":…}", url, resp.StatusCode, body)
	}
	if _, err := durability.ParseBookmark(out.Bookmark); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return out.Bookmark
}

// TestBookmarkRoutes: GET /counter/<name>/bookmark names the state after
// the latest write, later writes sort after it, and ?at= finds the state
// of a past time from the LTX log's commit times; a time before the
// history is 404, a bad one 400, and a log without bookmarks 501.
func TestBookmarkRoutes(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	log, err := ltxlog.New(ltxlog.Options{Store: memstore.New(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs := serveOn(t, log)
	// A cell never written: the state before any commit.
	if b := bookmarkOf(t, hs.URL+"/counter/b/bookmark"); b != "0000000000000000-0000000000000000" {
		t.Fatalf("a never-written cell's bookmark is %q, want the zero bookmark", b)
	}
	for i := 0; i < 5; i++ {
		do(t, "POST", hs.URL+"/counter/b")
	}
	b5 := bookmarkOf(t, hs.URL+"/counter/b/bookmark")
	if again := bookmarkOf(t, hs.URL+"/counter/b/bookmark"); again != b5 {
		t.Fatalf("with no write between, bookmarks %q and %q", b5, again)
	}
	clk.Advance(time.Minute)
	for i := 0; i < 3; i++ {
		do(t, "POST", hs.URL+"/counter/b")
	}
	b8 := bookmarkOf(t, hs.URL+"/counter/b/bookmark")
	if !(b5 < b8) {
		t.Fatalf("the bookmark after 3 more writes %q does not sort after %q", b8, b5)
	}
	at := func(tm time.Time) string { return fmt.Sprintf("%s/counter/b/bookmark?at=%d", hs.URL, tm.UnixMilli()) }
	if got := bookmarkOf(t, at(start.Add(30*time.Second))); got != b5 {
		t.Fatalf("bookmark at start+30s = %q, want %q (the value-5 state)", got, b5)
	}
	if got := bookmarkOf(t, at(start.Add(time.Hour))); got != b8 {
		t.Fatalf("bookmark at start+1h = %q, want %q", got, b8)
	}
	if resp, body := do(t, "GET", at(start.Add(-time.Second))); resp.StatusCode != 404 {
		t.Fatalf("bookmark before the first write: %d %q, want 404", resp.StatusCode, body)
	}
	for _, bad := range []string{"x", "-5", "0", ""} {
		if resp, body := do(t, "GET", hs.URL+"/counter/b/bookmark?at="+bad); resp.StatusCode != 400 {
			t.Fatalf("bookmark?at=%s: %d %q, want 400", bad, resp.StatusCode, body)
		}
	}

	local := serveOn(t, nil)
	do(t, "POST", local.URL+"/counter/b")
	if resp, body := do(t, "GET", local.URL+"/counter/b/bookmark"); resp.StatusCode != 501 {
		t.Fatalf("bookmark on the local log: %d %q, want 501", resp.StatusCode, body)
	}
}
