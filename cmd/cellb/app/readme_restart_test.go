package app

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeRestartRecipe runs the README's restart recipe as written: a
// second `cellb serve` on the same data directory and its own port answers
// for a cell the first holds (routed to it), and once the first is stopped
// with SIGTERM the second answers alone, with nothing lost.
func TestReadmeRestartRecipe(t *testing.T) {
	bin := cellbBinary(t)
	dir := t.TempDir()
	first := startWatched(t, bin, "first", "--data-dir", dir)
	get := func(base string) (int, int64) {
		t.Helper()
		resp, err := http.Get(base + "/counter/apples")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var v struct{ Value int64 }
		json.Unmarshal(body, &v)
		return resp.StatusCode, v.Value
	}
	for i := 0; i < 2; i++ {
		resp, err := http.Post(first.url+"/counter/apples", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	second := startWatched(t, bin, "second", "--data-dir", dir)
	if !strings.HasPrefix(second.url, "http://127.0.0.1:") || second.url == first.url {
		t.Fatalf("second process at %q, first at %q", second.url, first.url)
	}
	if code, v := get(second.url); code != 200 || v != 2 {
		t.Fatalf("the second process, for a cell the first holds: %d %d, want 200 2", code, v)
	}
	t0 := time.Now()
	first.signal(syscall.SIGTERM)
	defer func() { t.Logf("SIGTERM to exit and the last read: %v", time.Since(t0)) }()
	deadline := time.Now().Add(30 * time.Second)
	for !first.exitedByItself() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !first.exitedByItself() {
		t.Fatal("the first process did not stop on SIGTERM")
	}
	if code, v := get(second.url); code != 200 || v != 2 {
		t.Fatalf("after the first stopped: %d %d, want 200 2", code, v)
	}
}

// startWatched is startServe with the process watched, so that the test
// sees it exit by itself.
func startWatched(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, logf: logf, watched: true, args: append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)}
	p.start(t, bin)
	t.Cleanup(func() { p.kill(); logf.Close() })
	return p
}
