package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRun runs the program on a temporary directory, increments a counter,
// stops it, and runs it again on the same directory: the count is there.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ method, want string }{{"POST", `{"value":1}`}, {"GET", `{"value":1}`}} {
		ctx, stop := context.WithCancel(context.Background())
		addr := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-data", dir, "-listen", "127.0.0.1:0"}, func(a string) { addr <- a })
		}()
		var url string
		select {
		case a := <-addr:
			url = "http://" + a + "/counter/hits"
		case err := <-done:
			t.Fatalf("run: %v", err)
		}
		req, _ := http.NewRequest(c.method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != c.want {
			t.Errorf("%s: %d %q, want %s", c.method, resp.StatusCode, body, c.want)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
