package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestRestartOnOneHostKeepsAlarms: process b starts on a data directory
// that process a serves; a then arms a counter's alarm and is stopped
// before the alarm is due — with SIGTERM, as a restart does, or SIGKILL,
// as a crash does. b never gets a call for the counter, yet it learns the
// alarm when it takes over the shard a let go, and runs it: the alarm's
// row leaves the database and the counter gains 1000.
func TestRestartOnOneHostKeepsAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	for _, stop := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(stop.String(), func(t *testing.T) { keepsAlarms(t, stop) })
	}
}

func keepsAlarms(t *testing.T, stop syscall.Signal) {
	bin := cellbBinary(t)
	data := t.TempDir()
	a := startServe(t, bin, "a", "--data", data)
	b := startServe(t, bin, "b", "--data", data)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(p *proc, path string) {
		t.Helper()
		resp, err := client.Post(p.url+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s on %s: %s", path, p.name, resp.Status)
		}
	}
	// The counter's database appears only now, after b started: b's
	// start-up scan cannot have seen it.
	post(a, "/counter/woken")
	const due = 4 * time.Second
	post(a, fmt.Sprintf("/counter/woken/alarm?in=%d", due.Milliseconds()))
	armed := time.Now()
	a.signal(stop)
	if err := a.cmd.Wait(); err != nil && stop == syscall.SIGTERM {
		t.Fatalf("a did not exit cleanly: %v (see %s)", err, a.logf.Name())
	}
	a.dead = true

	db := filepath.Join(data, "cells", "Counter", cell.IDFromName("cellb-example", "Counter", "woken").String()+".sqlite3")
	if n, err := storedAlarms(t, db); err != nil || n != 1 {
		t.Fatalf("after a stopped, %d alarms stored (%v): a ran the alarm before it stopped (it took longer than %v), so this run shows nothing", n, err, time.Since(armed))
	}
	// Only b can run it now, and nothing but the alarm makes b open the
	// counter. Wait for the row to go (its deletion commits with +1000).
	deadline := armed.Add(due + 15*time.Second)
	for {
		n, err := storedAlarms(t, db)
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alarm a stored was never run by b (still %d stored, %v; see %s)", n, err, b.logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := client.Get(b.url + "/counter/woken")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Value int64 }
	if err := jsonDecode(resp, &v); err != nil || v.Value != 1001 {
		t.Fatalf("counter after the alarm: %d, %v; want 1001", v.Value, err)
	}
}

// storedAlarms counts the alarm rows in a copy of the database at path
// and its write-ahead log, so the live database is never opened here.
func storedAlarms(t *testing.T, path string) (int64, error) {
	t.Helper()
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "copy.sqlite3")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(copyPath+suffix, b, 0o600); err != nil {
			return 0, err
		}
	}
	ctx := context.Background()
	conn, err := wasm.New().Open(ctx, driver.Config{Path: copyPath})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, "SELECT count(*) FROM _cf_ALARM")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		err = driver.ScanValues(rows.Values(), &n)
	}
	return n, err
}
