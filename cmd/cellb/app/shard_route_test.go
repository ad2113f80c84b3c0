package app

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestRestartOnOneHostLosesNoCall: `cellb serve` processes share a data
// directory and are restarted one after another the documented way —
// start the new process, send the calls to it, stop the old one (SIGTERM)
// — ten times in a row, while 32 clients keep incrementing 16 counters
// picked at random. Two restarts in three pause the old process (SIGSTOP)
// for a moment, before it is told to stop or during its shutdown, so
// routed calls pile up on its socket. Calls to the new process for cells whose shard the old one
// holds are routed to the old one over its local socket; when the old one
// stops, the new one waits for the shard and takes the cells over. Every
// call answers 200, no counter value is answered twice, and each counter
// ends at exactly the number of calls that incremented it.
func TestRestartOnOneHostLosesNoCall(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	const (
		clients  = 32
		restarts = 10
	)
	counters := make([]string, 16)
	for k := range counters {
		counters[k] = fmt.Sprintf("restart-%d", k)
	}
	bin := cellbBinary(t)
	data := t.TempDir()
	client := &http.Client{Timeout: 30 * time.Second}

	// target is the process calls go to; inflight counts the calls sent
	// to each process, so an old process is stopped only once no client
	// is still calling it (as a load balancer drains a backend).
	type target struct {
		p        *proc
		inflight sync.WaitGroup
	}
	var (
		mu  sync.Mutex
		cur = &target{p: startServe(t, bin, "p0", "--data", data)}
	)
	pick := func() *target {
		mu.Lock()
		defer mu.Unlock()
		cur.inflight.Add(1)
		return cur
	}
	post := func(p *proc, counter string) (int64, error) {
		resp, err := client.Post(p.url+"/counter/"+counter, "", nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			var msg [512]byte
			n, _ := resp.Body.Read(msg[:])
			return 0, fmt.Errorf("%s: %s: %s", p.name, resp.Status, msg[:n])
		}
		var v struct{ Value int64 }
		return v.Value, jsonDecode(resp, &v)
	}
	// Each counter starts in the first process, so every shard in play
	// is held there when the second one starts.
	for _, c := range counters {
		if v, err := post(cur.p, c); err != nil || v != 1 {
			t.Fatalf("%s on p0: %d, %v", c, v, err)
		}
	}

	var (
		stop     atomic.Bool
		okCalls  = make([]atomic.Int64, len(counters))
		failures = make(chan error, clients)
		seenMu   sync.Mutex
		seen     = map[string]map[int64]bool{}
		wg       sync.WaitGroup
	)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				k := rand.IntN(len(counters))
				tg := pick()
				v, err := post(tg.p, counters[k])
				tg.inflight.Done()
				if err != nil {
					failures <- fmt.Errorf("client %d, %s: %w", i, counters[k], err)
					return
				}
				seenMu.Lock()
				if seen[counters[k]] == nil {
					seen[counters[k]] = map[int64]bool{}
				}
				dup := seen[counters[k]][v]
				seen[counters[k]][v] = true
				seenMu.Unlock()
				if dup {
					failures <- fmt.Errorf("client %d: %s answered value %d twice", i, counters[k], v)
					return
				}
				okCalls[k].Add(1)
			}
		}()
	}
	failed := func() error {
		select {
		case err := <-failures:
			return err
		default:
			return nil
		}
	}
	// Let some calls run on the first process, then restart.
	waitCalls := func(n int64) {
		var start int64
		for k := range counters {
			start += okCalls[k].Load()
		}
		for {
			var total int64
			for k := range counters {
				total += okCalls[k].Load()
			}
			if total-start >= n || len(failures) > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var firstErr error
	waitCalls(30)
	for r := 1; r <= restarts && firstErr == nil; r++ {
		next := &target{p: startServe(t, bin, fmt.Sprintf("p%d", r), "--data", data)}
		mu.Lock()
		old := cur
		cur = next
		mu.Unlock()
		old.inflight.Wait()
		switch r % 3 {
		case 0:
			// A holder busy when it is told to stop: routed calls pile up
			// on its socket while it is paused, and it is stopped just as
			// it runs them.
			old.p.signal(syscall.SIGSTOP)
			time.Sleep(200 * time.Millisecond)
			old.p.signal(syscall.SIGCONT)
			time.Sleep(2 * time.Millisecond)
			old.p.signal(syscall.SIGTERM)
		case 1:
			old.p.signal(syscall.SIGTERM)
		case 2:
			// A holder slow to shut down: paused somewhere in its
			// shutdown while routed calls pile up on its socket.
			old.p.signal(syscall.SIGTERM)
			time.Sleep(time.Millisecond)
			old.p.signal(syscall.SIGSTOP)
			time.Sleep(200 * time.Millisecond)
			old.p.signal(syscall.SIGCONT)
		}
		if err := old.p.cmd.Wait(); err != nil {
			firstErr = fmt.Errorf("%s did not exit cleanly: %v (see %s)", old.p.name, err, old.p.logf.Name())
		}
		old.p.dead = true
		waitCalls(30)
		if err := failed(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	stop.Store(true)
	wg.Wait()
	close(failures)
	var errs []error
	if firstErr != nil {
		errs = append(errs, firstErr)
	}
	for err := range failures {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		t.Fatalf("calls failed across %d restarts with %d clients (see the processes' logs):\n%v", restarts, clients, errors.Join(errs...))
	}
	// Each counter's value is 1 (the first call) plus every call
	// answered 200 since.
	last := cur.p
	var total int64
	for k, c := range counters {
		resp, err := client.Get(last.url + "/counter/" + c)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Value int64 }
		err = jsonDecode(resp, &v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + okCalls[k].Load(); v.Value != want {
			t.Errorf("%s = %d after %d acknowledged increments: want %d", c, v.Value, want, want)
		}
		total += okCalls[k].Load()
	}
	t.Logf("%d calls, all answered 200, over %d restarts with %d clients", total, restarts, clients)
}
