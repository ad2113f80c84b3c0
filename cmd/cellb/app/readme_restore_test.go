package app

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadmeBookmarkRestore is issue 23's acceptance run on the built
// binary, as the README starts it (`cellb serve`: shard locks, the LTX log
// in a local-files bucket): write 5, take a bookmark, write 3, restore the
// bookmark (reads 5), write once (6), restore the undo bookmark (reads 8),
// DELETE (reads 0).
func TestReadmeBookmarkRestore(t *testing.T) {
	bin := cellbBinary(t)
	p := startWatched(t, bin, "serve", "--data-dir", t.TempDir())
	c := p.url + "/counter/apples"
	call := func(method, url string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil {
			t.Fatalf("%s %s: %d %q", method, url, resp.StatusCode, body)
		}
		return out
	}
	value := func(method string) float64 {
		t.Helper()
		v, ok := call(method, c)["value"].(float64)
		if !ok {
			t.Fatalf("%s %s: no value", method, c)
		}
		return v
	}
	for i := 0; i < 5; i++ {
		value("POST")
	}
	b, _ := call("GET", c+"/bookmark")["bookmark"].(string)
	if len(b) != 33 {
		t.Fatalf("bookmark %q", b)
	}
	for i := 0; i < 3; i++ {
		value("POST")
	}
	if v := value("GET"); v != 8 {
		t.Fatalf("after 8 writes: %v", v)
	}
	undo, _ := call("POST", c+"/restore?bookmark="+b)["undo"].(string)
	if len(undo) != 33 || !(undo > b) {
		t.Fatalf("undo %q after bookmark %q", undo, b)
	}
	if v := value("GET"); v != 5 {
		t.Fatalf("after restoring the bookmark: %v, want 5", v)
	}
	if v := value("POST"); v != 6 {
		t.Fatalf("the write after the restore: %v, want 6", v)
	}
	call("POST", c+"/restore?bookmark="+undo)
	if v := value("GET"); v != 8 {
		t.Fatalf("after restoring the undo bookmark: %v, want 8", v)
	}
	if v := value("DELETE"); v != 0 {
		t.Fatalf("DELETE: %v, want 0", v)
	}
	if v := value("GET"); v != 0 {
		t.Fatalf("after DELETE: %v, want 0", v)
	}
	if !strings.HasPrefix(p.url, "http://127.0.0.1:") {
		t.Fatalf("served at %q", p.url)
	}
}
