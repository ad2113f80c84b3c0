package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
)

func startServer(t *testing.T, cfg serveConfig) (*server, *httptest.Server) {
	t.Helper()
	if cfg.Driver == "" {
		cfg.Driver = "wasm"
	}
	if cfg.ScriptName == "" {
		cfg.ScriptName = "cellb-example"
	}
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Second
	}
	s, err := newServer(context.Background(), cfg, nil, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.handler())
	t.Cleanup(func() {
		hs.Close()
		s.close(context.Background())
	})
	return s, hs
}

type answer struct {
	status int
	body   string
	value  int64
	node   string
	epoch  string
}

func call(t *testing.T, method, url string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, body: string(b), node: resp.Header.Get("X-Cellb-Node"), epoch: resp.Header.Get("X-Cellb-Epoch")}
	if resp.StatusCode == 200 {
		var v struct{ Value int64 }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: body %q is not the contract's JSON", method, url, b)
		}
		a.value = v.Value
	}
	return a
}

func TestCounterContract(t *testing.T) {
	dir := t.TempDir()
	_, hs := startServer(t, serveConfig{Data: dir})
	for want := int64(1); want <= 3; want++ {
		if a := call(t, "POST", hs.URL+"/counter/alpha"); a.status != 200 || a.value != want {
			t.Fatalf("POST: %+v, want value %d", a, want)
		}
	}
	if a := call(t, "GET", hs.URL+"/counter/alpha"); a.status != 200 || a.value != 3 || a.body != "{\"value\":3}\n" {
		t.Fatalf("GET: %+v", a)
	}
	if a := call(t, "GET", hs.URL+"/counter/other"); a.status != 200 || a.value != 0 {
		t.Fatalf("GET of a new counter: %+v", a)
	}
	if a := call(t, "POST", hs.URL+"/counter/alpha/alarm?in=100"); a.status != 200 || a.value != 3 {
		t.Fatalf("alarm: %+v", a)
	}
	deadline := time.Now().Add(10 * time.Second)
	for call(t, "GET", hs.URL+"/counter/alpha").value != 1003 {
		if time.Now().After(deadline) {
			t.Fatal("the alarm never added 1000")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// DELETE is deleteAll: the value reads 0 (and the alarm is gone).
	if a := call(t, "DELETE", hs.URL+"/counter/alpha"); a.status != 200 || a.value != 0 || a.body != "{\"value\":0}\n" {
		t.Fatalf("DELETE: %+v", a)
	}
	if a := call(t, "GET", hs.URL+"/counter/alpha"); a.status != 200 || a.value != 0 {
		t.Fatalf("GET after DELETE: %+v", a)
	}
	for _, bad := range []string{"/counter/alpha/alarm?in=abc", "/counter/alpha/alarm", "/counter/alpha/alarm?in=-5", "/counter/" + strings.Repeat("n", 300)} {
		a := call(t, "POST", hs.URL+bad)
		if a.status != 400 || strings.TrimSpace(a.body) == "" {
			t.Errorf("POST %s: %d %q, want 400 with the reason", bad, a.status, a.body)
		}
	}
}

// TestServeServesTheChatRoom: serve hosts the chat room example next to
// the counter, on the same URLs as before it left this package.
func TestServeServesTheChatRoom(t *testing.T) {
	_, hs := startServer(t, serveConfig{Data: t.TempDir()})
	resp, err := http.Post(hs.URL+"/room/lobby?ttl=60000", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	var posted map[string]int64
	err = json.NewDecoder(resp.Body).Decode(&posted)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || posted["id"] != 1 || posted["expires"] == 0 {
		t.Fatalf("POST: %d %v %v", resp.StatusCode, posted, err)
	}
	resp, err = http.Get(hs.URL + "/room/lobby")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `{"messages":[{"id":1,"at":`) || !strings.HasSuffix(string(b), `,"text":"hello"}]}`+"\n") {
		t.Fatalf("GET: %d %q", resp.StatusCode, b)
	}
}

// TestConcurrentIncrementsAreGapFree: 64 concurrent callers of one counter
// get 64 distinct, gap-free values, each acknowledged only once durable in
// the bucket (the restore below reads the bucket alone).
func TestConcurrentIncrementsAreGapFree(t *testing.T) {
	dir := t.TempDir()
	s, hs := startServer(t, serveConfig{Data: dir})
	const callers = 64
	values := make(chan int64, callers)
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := call(t, "POST", hs.URL+"/counter/busy")
			if a.status != 200 {
				t.Errorf("POST: %+v", a)
			}
			values <- a.value
		}()
	}
	wg.Wait()
	close(values)
	var got []int64
	for v := range values {
		got = append(got, v)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("values %v are not 1..%d", got, callers)
		}
	}
	// Every acknowledged increment is in the bucket.
	key := s.app.NS.Key(s.app.NS.IDFromName("busy"))
	out := filepath.Join(t.TempDir(), "busy.db")
	if code, _, stderr := runCLI(t, "restore", filepath.Join(dir, "bucket"), key, out, "--quiet"); code != 0 {
		t.Fatalf("restore: %s", stderr)
	}
}

// TestLocalFilesArePrimaryAndBucketRestoresEmpty: a restart keeps the
// counters; a lost local database comes back from the embedded bucket.
func TestLocalFilesArePrimaryAndBucketRestoresEmpty(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := newServer(ctx, serveConfig{Data: dir, Driver: "wasm", ScriptName: "x", Idle: time.Minute}, nil, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.handler())
	for i := 0; i < 5; i++ {
		call(t, "POST", hs.URL+"/counter/keep")
	}
	hs.Close()
	if err := s.close(ctx); err != nil {
		t.Fatal(err)
	}
	// The local database disappears (a new disk); the bucket restores it.
	if err := os.RemoveAll(filepath.Join(dir, "cells")); err != nil {
		t.Fatal(err)
	}
	_, hs2 := startServer(t, serveConfig{Data: dir, ScriptName: "x"})
	if a := call(t, "GET", hs2.URL+"/counter/keep"); a.value != 5 {
		t.Fatalf("after losing the local files: %+v, want 5 from the bucket", a)
	}
}

// TestVerifyOwnerOnAck: a fleet node re-reads own.json before every
// acknowledgement: its own record lets the writes through; once the record
// names another node, a durable write is not acknowledged, although this
// node's lease is live.
func TestVerifyOwnerOnAck(t *testing.T) {
	bucket := "file://" + t.TempDir()
	s, a := startServer(t, serveConfig{Data: t.TempDir(), Bucket: bucket, Node: "node_v"})
	for want := int64(1); want <= 3; want++ {
		if r := call(t, "POST", a.URL+"/counter/v"); r.status != 200 || r.value != want {
			t.Fatalf("%+v", r)
		}
	}
	key := "cells/Counter:" + cellIDFromName("cellb-example", "v") + "/own.json"
	if _, err := s.bucket.Put(context.Background(), key, []byte(`{"node":"node_w","epoch":2}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	r := call(t, "POST", a.URL+"/counter/v")
	if r.status != 503 || !strings.Contains(r.body, "this node's lease has lapsed; the write is refused") {
		t.Fatalf("a write under a record naming another node: %+v", r)
	}
}

// TestOwnedElsewhereIs409: two fleet nodes without peers on one bucket.
func TestOwnedElsewhereIs409(t *testing.T) {
	bucket := "file://" + t.TempDir()
	_, a := startServer(t, serveConfig{Data: t.TempDir(), Bucket: bucket, Node: "node_a"})
	_, b := startServer(t, serveConfig{Data: t.TempDir(), Bucket: bucket, Node: "node_b"})
	if r := call(t, "POST", a.URL+"/counter/c"); r.status != 200 || r.node != "node_a" || r.epoch != "1" {
		t.Fatalf("a: %+v", r)
	}
	r := call(t, "POST", b.URL+"/counter/c")
	if r.status != 409 || !strings.HasPrefix(r.body, "Durable Object Counter/") || !strings.Contains(r.body, "is owned by another node") {
		t.Fatalf("b: %+v", r)
	}
}

func TestServeFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"--node", "x"},
		{"--bucket", "file:///tmp/x", "--advertise", "h:1"},
		{"extra"},
		{"--driver", "nope", "--listen", "127.0.0.1:0"},
	} {
		code, _, stderr := runCLI(t, append([]string{"serve"}, bad...)...)
		if code == 0 || stderr == "" {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}

// TestServeRefusesEmptyAndDotNames: the counter's routes answer 400 to an
// empty or dot-segment name, never a redirect to (and a call on) another
// counter; the counters named by the cleaned paths are untouched.
func TestServeRefusesEmptyAndDotNames(t *testing.T) {
	_, hs := startServer(t, serveConfig{Data: t.TempDir()})
	for _, path := range []string{"/counter//alarm?in=10", "/counter/./alarm", "/counter/../counter/x", "/counter/%2e%2e", "/counter/%2E%2e/alarm?in=1"} {
		if r := call(t, "POST", hs.URL+path); r.status != http.StatusBadRequest || !strings.HasPrefix(r.body, "bad path ") {
			t.Errorf("POST %s: %+v, want 400", path, r)
		}
	}
	for _, name := range []string{"alarm", "x"} {
		if r := call(t, "GET", hs.URL+"/counter/"+name); r.status != 200 || r.value != 0 {
			t.Errorf("counter %s: %+v, want untouched", name, r)
		}
	}
}
