package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// Ticker streams: GET /ticker/{name} answers "one\n" (flushed), waits
// until step is closed (unless asked with ?warm=1), counts the visit in its storage, answers "two\n"
// and returns. GET /big/{name}?mib=N answers N MiB in 4 KiB writes,
// never flushing.
type Ticker struct {
	st   *cell.State
	step chan struct{}
}

func (t *Ticker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if mib, err := strconv.Atoi(r.URL.Query().Get("mib")); err == nil {
		block := make([]byte, 4<<10)
		for range mib << 8 {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
		return
	}
	io.WriteString(w, "one\n")
	w.(http.Flusher).Flush()
	if r.URL.Query().Get("warm") == "" {
		<-t.step
	}
	if err := t.st.KV().Put(r.Context(), "visits", 1); err != nil {
		return
	}
	io.WriteString(w, "two\n")
}

// tickerRoutes registers Ticker on a node; every node's handler serves
// it through the cell's stub, wherever the cell is owned.
func tickerRoutes(step chan struct{}) func(s *host.Setup) error {
	return func(s *host.Setup) error {
		ns, err := cell.Register(s.Runtime, "Ticker", func(ctx context.Context, st *cell.State) (*Ticker, error) {
			return &Ticker{st: st, step: step}, nil
		})
		if err != nil {
			return err
		}
		s.Mux.HandleFunc("GET /ticker/{name}", func(w http.ResponseWriter, r *http.Request) {
			ns.Get(ns.IDFromName(r.PathValue("name"))).ServeHTTP(w, r)
		})
		// The same after a typed call: on a node that does not own the
		// cell the whole request goes to the owner (host routing).
		s.Mux.HandleFunc("GET /typed/{name}", func(w http.ResponseWriter, r *http.Request) {
			stub := ns.Get(ns.IDFromName(r.PathValue("name")))
			_, err := cell.Call(r.Context(), stub, func(context.Context, *Ticker) (int, error) { return 0, nil })
			if errors.Is(err, host.ErrAnsweredByOwner) {
				return
			}
			if err != nil {
				httperr.Write(w, err)
				return
			}
			stub.ServeHTTP(w, r)
		})
		return nil
	}
}

// TestStreamedResponseThroughTheOwner: a streamed response of a cell owned
// by node a, asked of node b, reaches the client chunk by chunk: its first
// chunk arrives while the owner's handler still runs (the peer port, or
// the local socket, carries it through rather than reading it whole), and
// the rest when the handler returns. Both ways a request reaches the
// owner: the stub's Fetch sent alone (/ticker), and the whole request sent
// because of its typed call (/typed).
func TestStreamedResponseThroughTheOwner(t *testing.T) {
	for _, c := range []struct {
		fleet bool
		route string
	}{{true, "/ticker/"}, {false, "/ticker/"}, {true, "/typed/"}, {false, "/typed/"}} {
		fleet := c.fleet
		t.Run(map[bool]string{true: "fleet", false: "single host"}[fleet]+c.route, func(t *testing.T) {
			var bucket store.Store
			if fleet {
				bucket = memstore.New()
			}
			dir := shortDir(t)
			step := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(step) }) }
			a := startTallyNode(t, bucket, dir, tickerRoutes(step))
			b := startTallyNode(t, bucket, dir, tickerRoutes(step))
			// Registered after the nodes: runs before their Close, which
			// waits for the handler.
			t.Cleanup(release)
			// a takes the cell.
			if got := get(t, a.url+"/ticker/s?warm=1"); got != "one\ntwo\n" {
				t.Fatalf("through a: %q", got)
			}
			resp, err := http.Get(b.url + c.route + "s")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			// The owner's handler is blocked on step: this line can only
			// come through if the answer streams.
			first := make(chan string, 1)
			go func() {
				l, err := br.ReadString('\n')
				first <- fmt.Sprintf("%q, %v", l, err)
			}()
			select {
			case l := <-first:
				if l != `"one\n", <nil>` {
					t.Fatalf("first line through b: %s", l)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the first line did not come through b while the owner's handler ran: the answer was not streamed")
			}
			release()
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != "two\n" {
				t.Fatalf("rest through b: %q, %v", rest, err)
			}
		})
	}
}

// TestStreamedResponseMemory: a cell's response of 8 and of 64 MiB, read
// through a node that does not own the cell (owner, peer port, forwarding
// node, client): the heap of the process, which holds all of them, grows by
// about the same for both, far less than either response.
func TestStreamedResponseMemory(t *testing.T) {
	bucket, dir := memstore.New(), t.TempDir()
	step := make(chan struct{})
	a := startTallyNode(t, bucket, dir, tickerRoutes(step))
	b := startTallyNode(t, bucket, dir, tickerRoutes(step))
	if got := get(t, a.url+"/ticker/big?mib=0"); got != "" {
		t.Fatalf("a takes the cell: %q", got)
	}
	var peak heaptest.HeapPeak
	growth := map[int]uint64{}
	for _, mib := range []int{8, 64} {
		base := peak.Reset()
		resp, err := http.Get(fmt.Sprintf("%s/ticker/big?mib=%d", b.url, mib))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 32<<10)
		var n, next int64
		for {
			k, err := resp.Body.Read(buf)
			n += int64(k)
			if n >= next {
				peak.Sample()
				next += 1 << 20
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		if n != int64(mib)<<20 {
			t.Fatalf("%d MiB response: read %d bytes", mib, n)
		}
		growth[mib] = peak.Max() - min(base, peak.Max())
		t.Logf("%d MiB streamed: heap grew by %.1f MiB at most", mib, float64(growth[mib])/(1<<20))
	}
	if growth[64] > 8<<20 {
		t.Fatalf("a 64 MiB response grew the heap by %.1f MiB: it is held, not streamed", float64(growth[64])/(1<<20))
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %q %v", url, resp.StatusCode, b, err)
	}
	return string(b)
}
