package app

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestRoutedCallsLogNoWarnings: two `cellb serve` processes share a data
// directory; the first holds 8 counters' shards and the second receives
// 24 concurrent calls for them, which it routes to the first. Routing is
// routine: the second process's log has no WARN or ERROR line.
func TestRoutedCallsLogNoWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	data := t.TempDir()
	p0 := startServe(t, bin, "p0", "--data", data)
	for k := range 8 {
		if a := call(t, "POST", fmt.Sprintf("%s/counter/routed-%d", p0.url, k)); a.status != 200 {
			t.Fatalf("p0: %+v", a)
		}
	}
	p1 := startServe(t, bin, "p1", "--data", data)
	errs := make(chan string, 24)
	for i := range 24 {
		go func() {
			resp, err := http.Post(fmt.Sprintf("%s/counter/routed-%d", p1.url, i%8), "", nil)
			switch {
			case err != nil:
				errs <- err.Error()
			case resp.StatusCode != 200:
				resp.Body.Close()
				errs <- "p1: " + resp.Status
			default:
				resp.Body.Close()
				errs <- ""
			}
		}()
	}
	for range 24 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
	// Each counter had 1 from p0 and 3 routed through p1.
	for k := range 8 {
		if a := call(t, "GET", fmt.Sprintf("%s/counter/routed-%d", p0.url, k)); a.status != 200 || a.value != 4 {
			t.Fatalf("routed-%d on p0: %+v, want 4", k, a)
		}
	}
	log, err := os.ReadFile(p1.logf.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Fatalf("routing logged a warning:\n%s", line)
		}
	}
}
