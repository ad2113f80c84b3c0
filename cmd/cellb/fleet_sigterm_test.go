package main

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMReleasesCells: a node stopped with SIGTERM writes released
// ownership records and deletes its node lease before it exits, so another
// node takes its cells at once — long before the TTL — and continues them
// from the bucket.
func TestSIGTERMReleasesCells(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	bucketDir := t.TempDir()
	bucket := "file://" + bucketDir
	const ttl = 30 * time.Second // far longer than the handover may take
	a := startNode(t, bin, bucket, "na", "--ttl", ttl.String())
	b := startNode(t, bin, bucket, "nb", "--ttl", ttl.String())
	client := &http.Client{Timeout: 5 * time.Second}
	post := func(p *proc) (int, string) {
		resp, err := client.Post(p.url+"/counter/held", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Cellb-Node")
	}
	for i := 0; i < 3; i++ {
		if code, node := post(a); code != 200 || node != "na" {
			t.Fatalf("a: %d %s", code, node)
		}
	}
	if code, _ := post(b); code != 409 {
		t.Fatalf("b served a cell a holds: %d", code)
	}
	stopped := time.Now()
	a.signal(syscall.SIGTERM)
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("a did not exit cleanly on SIGTERM: %v (log %s)", err, a.logf.Name())
	}
	a.dead = true
	if _, err := os.Stat(filepath.Join(bucketDir, "nodes", "na.json")); !os.IsNotExist(err) {
		t.Fatalf("a's node lease is still in the bucket after SIGTERM (%v)", err)
	}
	resp, err := client.Post(b.url+"/counter/held", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Value int64 }
	err = jsonDecode(resp, &v)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || v.Value != 4 {
		t.Fatalf("b after a's SIGTERM: %d %v value %d, want 200 and 4", resp.StatusCode, err, v.Value)
	}
	if took := time.Since(stopped); took > ttl/2 {
		t.Fatalf("the handover took %v: the cell was not released", took)
	}
}
