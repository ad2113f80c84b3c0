package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// faultProxyBuild builds scripts/faultproxy once per test run.
var faultProxyBuild struct {
	sync.Once
	path string
	err  error
}

// faultProxyBinary builds scripts/faultproxy (standard library only, built
// outside the workspace as the script's users run it).
func faultProxyBinary(t testing.TB) string {
	t.Helper()
	faultProxyBuild.Do(func() {
		dir, err := os.MkdirTemp("", "faultproxy-bin-")
		if err != nil {
			faultProxyBuild.err = err
			return
		}
		faultProxyBuild.path = filepath.Join(dir, "faultproxy")
		cmd := exec.Command("go", "build", "-o", faultProxyBuild.path, "main.go")
		cmd.Dir = filepath.Join("..", "..", "..", "scripts", "faultproxy")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			faultProxyBuild.err = fmt.Errorf("building scripts/faultproxy: %v\n%s", err, out)
		}
	})
	if faultProxyBuild.err != nil {
		t.Fatal(faultProxyBuild.err)
	}
	return faultProxyBuild.path
}

// faultProxy is a running scripts/faultproxy process.
type faultProxy struct {
	url string
	cmd *exec.Cmd
}

// faultProxyStats is what GET /_faultproxy/stats answers.
type faultProxyStats struct {
	Requests         int64 `json:"requests"`
	Forwarded        int64 `json:"forwarded"`
	Failed           int64 `json:"failed"`
	FailedAfterApply int64 `json:"failed_after_apply"`
	ResetAfterApply  int64 `json:"reset_after_apply"`
	Stalled          int64 `json:"stalled"`
	UpstreamErrors   int64 `json:"upstream_errors"`
}

// startFaultProxy runs scripts/faultproxy in front of target with the
// given flags (-latency 10ms, -fail-after-apply 0.02, ...) on a free port
// of 127.0.0.1; the test's cleanup stops it.
func startFaultProxy(t testing.TB, target string, flags ...string) *faultProxy {
	t.Helper()
	cmd := exec.Command(faultProxyBinary(t), append([]string{"-listen", "127.0.0.1:0", "-target", target}, flags...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	got := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if u, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
				got <- u
			}
		}
	}()
	select {
	case p.url = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("faultproxy did not start")
	}
	return p
}

// stats reads the proxy's counts.
func (p *faultProxy) stats(t testing.TB) faultProxyStats {
	t.Helper()
	var s faultProxyStats
	resp, err := http.Get(p.url + "/_faultproxy/stats")
	if err != nil {
		t.Fatalf("faultproxy stats: %v", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("faultproxy stats: %v", err)
	}
	return s
}

// TestFaultProxyInjects checks each fault of scripts/faultproxy against a
// recording server: what reaches the server, what the client is told, and
// that the Host header the client signed arrives unchanged.
func TestFaultProxyInjects(t *testing.T) {
	var applied atomic.Int64
	var hosts sync.Map
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPut {
			applied.Add(1)
		}
		hosts.Store(r.Host, true)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	}))
	defer backend.Close()
	do := func(p *faultProxy, method string) (int, string, error) {
		req, _ := http.NewRequest(method, p.url+"/b/key", strings.NewReader("body"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	clean := startFaultProxy(t, backend.URL, "-latency", "1ms")
	if code, body, err := do(clean, http.MethodPut); err != nil || code != 200 || body != "PUT /b/key body" {
		t.Fatalf("clean proxy: %d %q %v", code, body, err)
	}
	if _, ok := hosts.Load(strings.TrimPrefix(clean.url, "http://")); !ok {
		t.Fatalf("the server did not see the Host header the client sent (%s)", clean.url)
	}

	afterApply := startFaultProxy(t, backend.URL, "-fail-after-apply", "1")
	before := applied.Load()
	if code, body, err := do(afterApply, http.MethodPut); err != nil || code != 500 || !strings.Contains(body, "InternalError") {
		t.Fatalf("fail-after-apply PUT: %d %q %v, want 500 with an S3 error", code, body, err)
	}
	if applied.Load() != before+1 {
		t.Fatal("fail-after-apply did not forward the PUT")
	}
	if code, _, err := do(afterApply, http.MethodGet); err != nil || code != 200 {
		t.Fatalf("fail-after-apply touched a GET: %d %v", code, err)
	}

	reset := startFaultProxy(t, backend.URL, "-reset-after-apply", "1")
	before = applied.Load()
	if code, _, err := do(reset, http.MethodPut); err == nil {
		t.Fatalf("reset-after-apply answered %d, want a broken connection", code)
	}
	if applied.Load() < before+1 {
		t.Fatal("reset-after-apply did not forward the PUT")
	}

	fail := startFaultProxy(t, backend.URL, "-fail", "1")
	before = applied.Load()
	if code, _, err := do(fail, http.MethodPut); err != nil || code != 500 {
		t.Fatalf("fail: %d %v, want 500", code, err)
	}
	if applied.Load() != before {
		t.Fatal("fail forwarded the PUT")
	}
	s := fail.stats(t)
	if s.Requests != 1 || s.Failed != 1 || s.Forwarded != 0 {
		t.Fatalf("fail's stats: %+v", s)
	}
	if s := afterApply.stats(t); s.FailedAfterApply != 1 || s.Forwarded != 2 {
		t.Fatalf("fail-after-apply's stats: %+v", s)
	}
}
