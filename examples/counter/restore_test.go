package counter

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store/memstore"
)

// serveLeased serves the app on the LTX log under single-host shard locks
// (a lease with epochs, as cellb serve runs).
func serveLeased(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	ls, err := shard.Open(dir+"/shards", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	log, err := ltxlog.New(ltxlog.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, cell.Options{DataDir: dir, Log: log, Lease: ls})
}

func restore(t *testing.T, url string) string {
	t.Helper()
	resp, body := do(t, "POST", url)
	var out struct {
		Undo string `json:"undo"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("POST %s: %d %q, want 200 {\"undo\":…}", url, resp.StatusCode, body)
	}
	if _, err := durability.ParseBookmark(out.Undo); err != nil {
		t.Fatalf("POST %s: undo %v", url, err)
	}
	return out.Undo
}

func value(t *testing.T, url string) string {
	t.Helper()
	resp, body := do(t, "GET", url)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, body)
	}
	return strings.TrimSpace(body)
}

// TestRestoreRoute: POST /counter/<name>/restore?bookmark=B answers the
// undo bookmark and the next call reads B's value; the undo bookmark
// brings the newer value back. A bad bookmark is 400, one after the
// current state 400, and a log without bookmarks 501.
func TestRestoreRoute(t *testing.T) {
	hs := serveLeased(t)
	c := hs.URL + "/counter/r"
	for i := 0; i < 5; i++ {
		do(t, "POST", c)
	}
	b5 := bookmarkOf(t, c+"/bookmark")
	for i := 0; i < 3; i++ {
		do(t, "POST", c)
	}
	undo := restore(t, c+"/restore?bookmark="+b5)
	if v := value(t, c); v != `{"value":5}` {
		t.Fatalf("after restoring the bookmark of 5: %s", v)
	}
	if _, body := do(t, "POST", c); strings.TrimSpace(body) != `{"value":6}` {
		t.Fatalf("a write after the restore: %s", body)
	}
	restore(t, c+"/restore?bookmark="+undo)
	if v := value(t, c); v != `{"value":8}` {
		t.Fatalf("after restoring the undo bookmark: %s", v)
	}
	for _, bad := range []string{"", "yesterday", "0000000000000001-000000000000000G"} {
		if resp, body := do(t, "POST", c+"/restore?bookmark="+bad); resp.StatusCode != 400 {
			t.Fatalf("bookmark %q: %d %q, want 400", bad, resp.StatusCode, body)
		}
	}
	if resp, body := do(t, "POST", c+"/restore?bookmark=ffffffffffffffff-0000000000000001"); resp.StatusCode != 400 {
		t.Fatalf("a bookmark after the current state: %d %q, want 400", resp.StatusCode, body)
	}
	if v := value(t, c); v != `{"value":8}` {
		t.Fatalf("after refused restores: %s", v)
	}
	local := serveOn(t, nil)
	if resp, body := do(t, "POST", local.URL+"/counter/r/restore?bookmark="+b5); resp.StatusCode != 501 {
		t.Fatalf("on the local log: %d %q, want 501", resp.StatusCode, body)
	}
}
