package app

// Benchmarks of the chat room over WebSockets on a `cellb serve` process
// (the embedded default: a single host, the LTX log on a files bucket
// under --data-dir). Written up in docs/benchmarks.md; run with
//
//	go test -run '^$' -bench 'WebSocketRoomFanout' -benchtime 3000x ./cmd/cellb
//	go test -run '^$' -bench 'WebSocketHibernatedMemory' -benchtime 1x ./cmd/cellb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// benchServe starts `cellb serve` with args for a benchmark.
func benchServe(b *testing.B, args ...string) *proc {
	b.Helper()
	dir := b.TempDir()
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		b.Fatal(err)
	}
	p := &proc{name: "bench", logf: logf, args: append([]string{"serve", "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data")}, args...)}
	if err := p.tryStart(cellbBinary(b)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.kill(); logf.Close() })
	return p
}

// BenchmarkWebSocketRoomFanout: 100 sockets in one room send b.N messages
// between them, all at once; each message is stored (durably) and sent to
// all 100. It reports the messages stored per second and the messages
// delivered per second (100 per message), until the last socket got the
// last one.
func BenchmarkWebSocketRoomFanout(b *testing.B) {
	const sockets = 100
	p := benchServe(b, "--idle", "1h")
	ctx := context.Background()
	conns := make([]*websocket.Conn, sockets)
	for i := range conns {
		c, err := dialRoom(ctx, p.url, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		conns[i] = c
	}
	per := max(1, b.N/sockets)
	total := per * sockets
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range per {
				if err := c.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf("socket %d message %d", i, j))); err != nil {
					b.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range total {
				if _, _, err := c.Read(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(total)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(total*sockets)/el.Seconds(), "deliveries/s")
}

// rssKiB is a process's resident set (VmRSS), in KiB.
func rssKiB(b *testing.B, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkWebSocketHibernatedMemory: the server's resident memory per
// open socket of a hibernated room (the room evicted, its sockets open on
// the node), from 2,000 sockets. It measures once, whatever b.N (run it
// with -benchtime 1x).
func BenchmarkWebSocketHibernatedMemory(b *testing.B) {
	const sockets = 2000
	admin := fmt.Sprintf("127.0.0.1:%d", 20000+os.Getpid()%20000)
	p := benchServe(b, "--idle", "300ms", "--alarm-residency", "-1s", "--admin-listen", admin)
	ctx := context.Background()
	// Warm up: one socket and one message, so the room's code paths and
	// the node's buffers are in before the baseline.
	warm, err := dialRoom(ctx, p.url, "warm")
	if err != nil {
		b.Fatal(err)
	}
	defer warm.CloseNow()
	waitHibernated := func(before int) {
		deadline := time.Now().Add(30 * time.Second)
		for roomEvictions(b, admin) == before {
			if time.Now().After(deadline) {
				b.Fatal("the room did not hibernate")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	base := rssKiB(b, p.cmd.Process.Pid)
	b.ResetTimer()
	for range min(b.N, 1) {
		ev := roomEvictions(b, admin)
		conns := make([]*websocket.Conn, sockets)
		for i := range conns {
			c, err := dialRoom(ctx, p.url, "lobby")
			if err != nil {
				b.Fatal(err)
			}
			conns[i] = c
		}
		waitHibernated(ev)
		time.Sleep(500 * time.Millisecond)
		held := rssKiB(b, p.cmd.Process.Pid)
		b.ReportMetric(float64(held-base)*1024/sockets, "B/socket")
		for _, c := range conns {
			c.CloseNow()
		}
	}
}
