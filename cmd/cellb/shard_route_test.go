package main

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestRestartOnOneHostLosesNoCall: two `cellb serve` processes share a data
// directory. Calls to the second for a cell whose shard the first holds are
// routed to the first over its local socket; when the first is stopped
// (SIGTERM, as a restart does) while calls keep coming, the second waits
// for the shard and takes the cell over. Every call succeeds, and the
// counter counts every one exactly once.
func TestRestartOnOneHostLosesNoCall(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	data := t.TempDir()
	start := func(name string) *proc { return startServe(t, bin, name, "--data", data) }
	a := start("a")
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(p *proc) (int64, error) {
		resp, err := client.Post(p.url+"/counter/restart", "", nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("%s: %s", p.name, resp.Status)
		}
		var v struct{ Value int64 }
		return v.Value, jsonDecode(resp, &v)
	}
	want := int64(1)
	if v, err := post(a); err != nil || v != want {
		t.Fatalf("a: %d, %v", v, err)
	}
	b := start("b")
	want++
	if v, err := post(b); err != nil || v != want {
		t.Fatalf("b, routed to a: %d, %v (see %s)", v, err, b.logf.Name())
	}

	stopped := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		a.signal(syscall.SIGTERM)
		stopped <- a.cmd.Wait()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		want++
		v, err := post(b)
		if err != nil || v != want {
			t.Fatalf("call %d through b while a restarts: %d, %v (see %s and %s)", want, v, err, a.logf.Name(), b.logf.Name())
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("a did not exit cleanly: %v", err)
	}
	a.dead = true
	want++
	if v, err := post(b); err != nil || v != want {
		t.Fatalf("b after a left: %d, %v", v, err)
	}
}
