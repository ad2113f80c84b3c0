package app

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/layout"
)

// ownRecordOf reads the ownership record of counter name from a files
// bucket.
func ownRecordOf(t *testing.T, bucketDir, name string) layout.OwnRecord {
	t.Helper()
	key := layout.OwnKey("Counter:" + cellIDFromName("cellb-example", name))
	data, err := os.ReadFile(filepath.Join(bucketDir, filepath.FromSlash(key)))
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	rec, err := layout.DecodeOwnRecord(key, data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSIGTERMReleasesCells: a node stopped with SIGTERM writes released
// ownership records ({"node":"","epoch":N}, at the epoch it served) before
// it exits, and another node takes its cells at once because of them: the
// test puts the stopped node's lease back, live for an hour, so only the
// released record lets another node take the cell (deleting the node lease
// alone would not), and continues it from the bucket.
func TestSIGTERMReleasesCells(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	bucketDir := t.TempDir()
	bucket := "file://" + bucketDir
	a := startNode(t, bin, bucket, "na")
	b := startNode(t, bin, bucket, "nb")
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(p *proc) (int, string, uint64) {
		resp, err := client.Post(p.url+"/counter/held", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		epoch, _ := strconv.ParseUint(resp.Header.Get("X-Cellb-Epoch"), 10, 64)
		return resp.StatusCode, resp.Header.Get("X-Cellb-Node"), epoch
	}
	var epoch uint64
	for i := 0; i < 3; i++ {
		code, node, e := post(a)
		if code != 200 || node != "na" {
			t.Fatalf("a: %d %s", code, node)
		}
		epoch = e
	}
	if code, _, _ := post(b); code != 409 {
		t.Fatalf("b served a cell a holds: %d", code)
	}
	leaseKey := filepath.Join(bucketDir, "nodes", "na.json")
	lease, err := os.ReadFile(leaseKey)
	if err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGTERM)
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("a did not exit cleanly on SIGTERM: %v (log %s)", err, a.logf.Name())
	}
	a.dead = true
	if _, err := os.Stat(leaseKey); !os.IsNotExist(err) {
		t.Fatalf("a's node lease is still in the bucket after SIGTERM (%v)", err)
	}
	if rec := ownRecordOf(t, bucketDir, "held"); rec != (layout.OwnRecord{Node: "", Epoch: epoch}) {
		t.Fatalf("own.json after a's SIGTERM is %+v, want the released record {\"node\":\"\",\"epoch\":%d}", rec, epoch)
	}
	// a's lease back, live for an hour: were the record not released, b
	// would have to wait for it (and answer 409 meanwhile).
	var l map[string]any
	if err := json.Unmarshal(lease, &l); err != nil {
		t.Fatal(err)
	}
	l["expires_ms"] = time.Now().Add(time.Hour).UnixMilli()
	lease, _ = json.Marshal(l)
	if err := os.WriteFile(leaseKey, lease, 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post(b.url+"/counter/held", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Value int64 }
	err = jsonDecode(resp, &v)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || v.Value != 4 || resp.Header.Get("X-Cellb-Epoch") != strconv.FormatUint(epoch+1, 10) {
		t.Fatalf("b after a's SIGTERM: %d %v value %d epoch %s, want 200, value 4, epoch %d", resp.StatusCode, err, v.Value, resp.Header.Get("X-Cellb-Epoch"), epoch+1)
	}
}

// TestSIGTERMUnderLoadAnswersEveryCall: three nodes with peers; 24 clients
// increment four counters through the two nodes that stay, while the node
// that owns the counters is stopped with SIGTERM. The stopping node answers
// forwarded calls "closing" until it has released its records, then closes
// its peer port; the senders wait for the release and take the cells. Every
// call is answered 200 (no 409 "owned by another node" during the
// handover), no value is acknowledged twice, and each counter ends at the
// number of increments acknowledged. The TTL is an hour, so only the
// released records can explain the handover; and the stopping node's peer
// port refuses connections only once its records are released.
func TestSIGTERMUnderLoadAnswersEveryCall(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	bucketDir := t.TempDir()
	bucket := "file://" + bucketDir
	peers := []string{"--peer-listen", "127.0.0.1:0", "--ttl", "1h"}
	a := startNode(t, bin, bucket, "na", peers...)
	b := startNode(t, bin, bucket, "nb", peers...)
	c := startNode(t, bin, bucket, "nc", peers...)
	client := &http.Client{Timeout: 60 * time.Second}
	counters := []string{"c0", "c1", "c2", "c3"}
	type answer struct {
		counter string
		code    int
		value   int64
		node    string
		body    string
	}
	post := func(p *proc, counter string) answer {
		resp, err := client.Post(p.url+"/counter/"+counter, "", nil)
		if err != nil {
			return answer{counter: counter, body: err.Error()}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var v struct{ Value int64 }
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(body, &v); err != nil {
				t.Errorf("bad body %q: %v", body, err)
			}
		}
		return answer{counter: counter, code: resp.StatusCode, value: v.Value, node: resp.Header.Get("X-Cellb-Node"), body: string(body)}
	}
	for _, k := range counters {
		if got := post(a, k); got.code != 200 || got.node != "na" {
			t.Fatalf("a does not own %s: %+v", k, got)
		}
	}
	var (
		mu      sync.Mutex
		answers []answer
		stopped bool // a has exited
		after   int  // answers since a exited
		done    = make(chan struct{})
	)
	const clients, wantAfter = 24, 400
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for {
				select {
				case <-done:
					return
				default:
				}
				p := b
				if r.IntN(2) == 0 {
					p = c
				}
				got := post(p, counters[r.IntN(len(counters))])
				mu.Lock()
				answers = append(answers, got)
				if stopped {
					after++
					if after == wantAfter {
						close(done)
					}
				}
				mu.Unlock()
			}
		}()
	}
	// Let the load reach a through forwarding, then stop it.
	for {
		mu.Lock()
		n := len(answers)
		mu.Unlock()
		if n >= 200 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// While a stops, probe its peer port: the first time it refuses a
	// connection, every record a held must be released already (the peer
	// port closes last).
	data, err := os.ReadFile(filepath.Join(bucketDir, "nodes", "na.json"))
	if err != nil {
		t.Fatal(err)
	}
	aLease, err := layout.DecodeNodeLease(layout.NodeKey("na"), data)
	if err != nil {
		t.Fatal(err)
	}
	probed := make(chan []layout.OwnRecord, 1)
	go func() {
		for {
			conn, err := net.Dial("tcp", aLease.Addr)
			if err == nil {
				conn.Close()
				time.Sleep(time.Millisecond)
				continue
			}
			var recs []layout.OwnRecord
			for _, k := range counters {
				key := layout.OwnKey("Counter:" + cellIDFromName("cellb-example", k))
				data, _ := os.ReadFile(filepath.Join(bucketDir, filepath.FromSlash(key)))
				rec, _ := layout.DecodeOwnRecord(key, data)
				recs = append(recs, rec)
			}
			probed <- recs
			return
		}
	}()
	a.signal(syscall.SIGTERM)
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("a did not exit cleanly on SIGTERM: %v (log %s)", err, a.logf.Name())
	}
	a.dead = true
	for i, rec := range <-probed {
		if rec.Node == "na" {
			t.Errorf("%s: a's peer port refused connections while own.json still named a (%+v): it closed before the records were released", counters[i], rec)
		}
	}
	mu.Lock()
	stopped = true
	mu.Unlock()
	wg.Wait()

	perCounter := map[string]int64{}
	seen := map[string]bool{}
	forwardedToA := 0
	for _, got := range answers {
		if got.code != 200 {
			t.Errorf("%s: answered %d %q", got.counter, got.code, got.body)
			continue
		}
		if got.node == "na" {
			forwardedToA++
		}
		k := fmt.Sprintf("%s=%d", got.counter, got.value)
		if seen[k] {
			t.Errorf("%s acknowledged twice", k)
		}
		seen[k] = true
		perCounter[got.counter]++
	}
	if forwardedToA == 0 {
		t.Fatal("no call was forwarded to a before it stopped: the test did not exercise the handover")
	}
	for _, k := range counters {
		got := post(b, k)
		// One increment per counter came straight to a before the load, and
		// this read-back adds one more.
		if want := perCounter[k] + 2; got.code != 200 || got.value != want {
			t.Errorf("%s: final %d %q, want %d (%d acknowledged under load)", k, got.value, got.body, want, perCounter[k])
		}
	}
	t.Logf("%d calls answered, %d by a through forwarding", len(answers), forwardedToA)
}
