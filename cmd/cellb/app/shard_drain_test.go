package app

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
)

// A call another process routed here that is still being received when
// this process shuts down gets its answer: the local socket stops
// accepting, but the connections it has are drained, not cut. Here the
// call's handler waits for its body (Expect: 100-continue) while the
// server closes; once the listener is gone the body follows, and the
// answer comes back whole — "not applied", since the runtime closed
// first, so the router runs the call itself.
func TestShutdownDrainsTheLocalSocket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := newServer(ctx, serveConfig{Data: dir, Driver: "wasm", ScriptName: "cellb-example", Idle: time.Minute, Durability: "ltx"}, nil, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "shards", shard.SocketPrefix+"*.sock"))
	if len(socks) != 1 {
		s.close(ctx)
		t.Skip("no local socket here (path too long)")
	}
	localPath := socks[0]
	conn, err := net.Dial("unix", localPath)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest("POST", "http://holder/room/drain", nil)
	if _, err := io.WriteString(conn, "POST /room/drain HTTP/1.1\r\nHost: holder\r\n"+peer.HeaderForwarded+": other\r\n"+
		"Content-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusContinue {
			break // the handler is reading the body
		}
		if resp.StatusCode != http.StatusProcessing {
			t.Fatalf("answered %s before the body was sent", resp.Status)
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- s.close(ctx) }()
	// Wait for the listener to close (the runtime has closed before it).
	for {
		c, err := net.Dial("unix", localPath)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(time.Millisecond)
	}
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatalf("the connection of a call in flight was cut at shutdown: %v", err)
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("no answer to a call in flight at shutdown: %v", err)
		}
		if resp.StatusCode >= 200 {
			break
		}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the answer was cut: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(shard.HeaderNotApplied) == "" {
		t.Fatalf("answer %s %q (%v), want 503 with %s", resp.Status, body, resp.Header, shard.HeaderNotApplied)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
}
