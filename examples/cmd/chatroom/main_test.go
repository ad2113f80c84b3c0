package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRun runs the program on a temporary directory, posts a message,
// stops it, and runs it again on the same directory: the message is there.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	for _, method := range []string{"POST", "GET"} {
		ctx, stop := context.WithCancel(context.Background())
		addr := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-data", dir, "-listen", "127.0.0.1:0"}, func(a string) { addr <- a })
		}()
		var url string
		select {
		case a := <-addr:
			url = "http://" + a + "/room/lobby"
		case err := <-done:
			t.Fatalf("run: %v", err)
		}
		req, _ := http.NewRequest(method, url, strings.NewReader("hello"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			ID       int64
			Messages []struct{ Text string }
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		switch {
		case resp.StatusCode != 200 || err != nil:
			t.Errorf("%s: %d %v", method, resp.StatusCode, err)
		case method == "POST" && out.ID != 1:
			t.Errorf("POST: id %d, want 1", out.ID)
		case method == "GET" && (len(out.Messages) != 1 || out.Messages[0].Text != "hello"):
			t.Errorf("GET: %+v", out.Messages)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
