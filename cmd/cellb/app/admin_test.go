package app

import (
	"bufio"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeAdminListen: the built binary, run with --admin-listen on a
// free port, prints the admin address before the app's, answers /healthz
// and /readyz 200 once it listens, and serves Prometheus text at /metrics
// that parses and counts the calls it served.
func TestServeAdminListen(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data", t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var admin, app string
	for lines := bufio.NewScanner(out); app == "" && lines.Scan(); {
		if u, ok := strings.CutPrefix(lines.Text(), "admin on "); ok {
			admin = u
		}
		if u, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			app = u
		}
	}
	if admin == "" || app == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("admin %q, app %q; stderr:\n%s", admin, app, &stderr)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status := getStatus(t, admin+path); status != 200 {
			t.Fatalf("GET %s: %d, want 200", path, status)
		}
	}
	for range 3 {
		if a := call(t, "POST", app+"/counter/scraped"); a.status != 200 {
			t.Fatalf("POST: %+v", a)
		}
	}
	if a := call(t, "GET", app+"/counter/scraped"); a.status != 200 || a.value != 3 {
		t.Fatalf("GET: %+v", a)
	}
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type %q, want Prometheus text", ct)
	}
	e := parseExposition(t, resp.Body)
	resp.Body.Close()
	if got := e.value("cellb_cell_turns_total", map[string]string{"class": "Counter", "outcome": "ok"}); got != 4 {
		t.Errorf("turns = %v, want 4", got)
	}
	if got := e.value("cellb_cell_open", nil); got != 1 {
		t.Errorf("cells open = %v, want 1", got)
	}
	if got := e.value("cellb_bucket_requests_total", map[string]string{"operation": "put", "outcome": "ok"}); got < 1 {
		t.Errorf("bucket puts = %v, want at least 1", got)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr:\n%s", err, &stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop on SIGTERM; stderr:\n%s", &stderr)
	}
}

// TestServeAdminListenRefusesABadAddress: an address that cannot be
// listened on stops serve before the node starts, exit status 1.
func TestServeAdminListenRefusesABadAddress(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(t.Context(), &env{stdout: &stdout, stderr: &stderr},
		[]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "256.0.0.1:bad", "--data", t.TempDir()})
	if code != 1 || !strings.HasPrefix(stderr.String(), "cellb serve: --admin-listen: ") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
