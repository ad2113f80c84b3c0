package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// The node log's goal table (issue 21), measured as a user runs it: `cellb
// serve --bucket s3://…` processes on versitygw behind scripts/faultproxy
// adding 10 ms to every request (as a real S3 round trip would), the
// per-cell mode (--node-log=false) beside the node log in the same run.
//
//	bash .ci/servers/versitygw.sh start /tmp/s3 && source /tmp/s3/env
//	go test ./cmd/cellb/app -run '^$' -bench NodeLog -benchtime 1x -timeout 30m
//
// CELLB_BENCH_DURATION (20 s) is each round's load, CELLB_BENCH_ROUNDS (2)
// the rounds per mode (alternated), CELLB_BENCH_LATENCY (10ms) the proxy's
// latency. scripts/bench-nodelog.sh runs the whole table.

// benchS3 sets the S3 credentials the processes inherit and starts the
// latency proxy in front of versitygw; it returns the proxy's URL.
func benchS3(b *testing.B) string {
	endpoint := os.Getenv("CELLB_TEST_S3_ENDPOINT")
	if endpoint == "" {
		b.Skip("CELLB_TEST_S3_ENDPOINT is not set; start .ci/servers/versitygw.sh and source its env file")
	}
	b.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CELLB_TEST_S3_ACCESS_KEY"))
	b.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CELLB_TEST_S3_SECRET_KEY"))
	b.Setenv("AWS_REGION", os.Getenv("CELLB_TEST_S3_REGION"))
	b.Setenv("AWS_CONFIG_FILE", os.DevNull)
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	latency := "10ms"
	if v := os.Getenv("CELLB_BENCH_LATENCY"); v != "" {
		latency = v
	}
	p := startFaultProxy(b, endpoint, "-latency", latency)
	b.Setenv("AWS_ENDPOINT_URL_S3", p.url)
	return p.url
}

func benchDuration() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("CELLB_BENCH_DURATION")); err == nil && v > 0 {
		return v
	}
	return 20 * time.Second
}

func benchRounds() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("CELLB_BENCH_ROUNDS"), &n); err == nil && n > 0 {
		return n
	}
	return 2
}

// benchNode is one `cellb serve` process with its admin port.
type benchNode struct {
	cmd   *exec.Cmd
	url   string
	admin string
	log   string
}

// startBenchNode starts `cellb serve` with args, an admin listener and a
// data directory of its own, and waits until it listens.
func startBenchNode(b *testing.B, name string, args ...string) *benchNode {
	b.Helper()
	dir := b.TempDir()
	n := &benchNode{log: filepath.Join(dir, name+".log")}
	logf, err := os.Create(n.log)
	if err != nil {
		b.Fatal(err)
	}
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}, args...)
	n.cmd = exec.Command(cellbBinary(b), args...)
	n.cmd.Stderr = logf
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.kill(); logf.Close() })
	lines := bufio.NewScanner(out)
	ready := make(chan struct{})
	go func() {
		for lines.Scan() {
			l := lines.Text()
			if u, ok := strings.CutPrefix(l, "admin on "); ok {
				n.admin = u
			}
			if u, ok := strings.CutPrefix(l, "listening on "); ok {
				n.url = u
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s did not start (see %s)", name, n.log)
	}
	return n
}

func (n *benchNode) kill() {
	if n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGCONT)
		n.cmd.Process.Kill()
		n.cmd.Wait()
	}
}

// bucketRequests reads the node's bucket requests by operation from its
// /metrics (cellb_bucket_requests_total, every outcome).
func (n *benchNode) bucketRequests(b *testing.B) map[string]float64 {
	b.Helper()
	e := scrapeURLTB(b, n.admin+"/metrics")
	out := map[string]float64{}
	if f, ok := e["cellb_bucket_requests_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "operation" {
					out[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func scrapeURLTB(b *testing.B, url string) exposition {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return fams
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}

// increment POSTs one increment and reports its latency, or an error.
func increment(url, counter string) (time.Duration, error) {
	start := time.Now()
	resp, err := benchClient.Post(url+"/counter/"+counter, "", nil)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("POST %s: %d %s", counter, resp.StatusCode, body)
	}
	return time.Since(start), nil
}

// loadResult is one round of load.
type loadResult struct {
	acked     int
	failed    int
	latencies []time.Duration
	elapsed   time.Duration
	puts      float64
	gets      float64
	lists     float64
	deletes   float64
}

func (r loadResult) rate() float64 { return float64(r.acked) / r.elapsed.Seconds() }

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// load runs clients incrementing random counters of cells for d on node,
// and counts the node's bucket PUTs and GETs over the same window.
func load(b *testing.B, n *benchNode, clients, cells int, d time.Duration) loadResult {
	b.Helper()
	before := n.bucketRequests(b)
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	stop := time.Now().Add(d)
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 9))
			var lat []time.Duration
			acked, failed := 0, 0
			for time.Now().Before(stop) {
				l, err := increment(n.url, fmt.Sprintf("c%d", r.IntN(cells)))
				if err != nil {
					failed++
					continue
				}
				acked++
				lat = append(lat, l)
			}
			mu.Lock()
			res.acked += acked
			res.failed += failed
			res.latencies = append(res.latencies, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	after := n.bucketRequests(b)
	res.puts, res.gets = after["put"]-before["put"], after["get"]-before["get"]
	res.lists, res.deletes = after["list"]-before["list"], after["delete"]-before["delete"]
	return res
}

// warm activates every cell once (activations cost requests of their
// own: the measured window is the busy cells' steady state).
func warm(b *testing.B, n *benchNode, cells int) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	work := make(chan int)
	for c := 0; c < 48; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := increment(n.url, fmt.Sprintf("c%d", i)); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	for i := 0; i < cells; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d of %d cells failed to activate (see %s)", failed.Load(), cells, n.log)
	}
}

func s3BenchBucket(what string) string {
	return fmt.Sprintf("s3://%s/bench-%s-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), what, time.Now().UnixNano())
}

// BenchmarkNodeLogBusyCells: one fleet node, 500 counter cells written by
// 48 clients for CELLB_BENCH_DURATION, per-cell mode and node log
// alternated in the same run (after a warm-up that activates every cell;
// with CELLB_BENCH_COLD set, none: the window then also holds the 500
// activations, as the first measurement did):
// acknowledged writes/s, p50 and p99, and bucket PUTs and GETs per
// acknowledged write (medians over the rounds), and the node log's rate as
// a multiple of the per-cell mode's.
func BenchmarkNodeLogBusyCells(b *testing.B) {
	benchS3(b)
	const cells, clients = 500, 48
	d := benchDuration()
	results := map[string][]loadResult{}
	for round := 0; round < benchRounds(); round++ {
		for _, mode := range []string{"per-cell", "node-log"} {
			n := startBenchNode(b, mode, "--bucket", s3BenchBucket(mode), "--node-log="+fmt.Sprint(mode == "node-log"), "--idle", "10m")
			if os.Getenv("CELLB_BENCH_COLD") == "" {
				warm(b, n, cells)
			}
			r := load(b, n, clients, cells, d)
			if os.Getenv("CELLB_BENCH_DETAIL") != "" {
				e := scrapeURLTB(b, n.admin+"/metrics")
				for _, name := range []string{"cellb_nodelog_flush_duration_seconds", "cellb_bucket_request_duration_seconds", "cellb_cell_durable_wait_duration_seconds"} {
					if f, ok := e[name]; ok {
						for _, m := range f.GetMetric() {
							h := m.GetHistogram()
							if h.GetSampleCount() > 0 {
								b.Logf("%s %v: mean %.1f ms over %d", name, m.GetLabel(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()), h.GetSampleCount())
							}
						}
					}
				}
			}
			n.kill()
			if r.acked == 0 || r.failed > r.acked/100 {
				b.Fatalf("%s: %d acknowledged, %d failed (see %s)", mode, r.acked, r.failed, n.log)
			}
			results[mode] = append(results[mode], r)
			b.Logf("round %d %s: %.0f writes/s, p50 %v, p99 %v, %.3f PUTs and %.3f GETs per write, %d failed",
				round, mode, r.rate(), percentile(r.latencies, .5), percentile(r.latencies, .99), r.puts/float64(r.acked), r.gets/float64(r.acked), r.failed)
		}
	}
	med := func(mode string, f func(loadResult) float64) float64 {
		var v []float64
		for _, r := range results[mode] {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, mode := range []string{"per-cell", "node-log"} {
		p := strings.ReplaceAll(mode, "-", "")
		b.ReportMetric(med(mode, loadResult.rate), p+"-writes/s")
		b.ReportMetric(med(mode, func(r loadResult) float64 { return ms(percentile(r.latencies, .5)) }), p+"-p50-ms")
		b.ReportMetric(med(mode, func(r loadResult) float64 { return ms(percentile(r.latencies, .99)) }), p+"-p99-ms")
		b.ReportMetric(med(mode, func(r loadResult) float64 { return r.puts / float64(r.acked) }), p+"-puts/write")
		b.ReportMetric(med(mode, func(r loadResult) float64 { return r.gets / float64(r.acked) }), p+"-gets/write")
	}
	b.ReportMetric(med("node-log", loadResult.rate)/med("per-cell", loadResult.rate), "nodelog/percell-x")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkNodeLogOneClient: one client incrementing one counter on one
// fleet node, sequentially: the median acknowledgement, beside the median
// round trip of one PUT of a small object through the same proxy, in the
// same run (ratio x-put), per mode.
func BenchmarkNodeLogOneClient(b *testing.B) {
	proxy := benchS3(b)
	st := openS3At(b, proxy)
	const writes = 300
	var put []time.Duration
	body := make([]byte, 300)
	for i := 0; i < writes; i++ {
		start := time.Now()
		if _, err := st.Put(context.Background(), fmt.Sprintf("bench-put-rtt/%d", i), body, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		put = append(put, time.Since(start))
	}
	putMedian := percentile(put, .5)
	b.ReportMetric(ms(putMedian), "put-rtt-ms")
	for _, mode := range []string{"per-cell", "node-log"} {
		n := startBenchNode(b, mode, "--bucket", s3BenchBucket("one-"+mode), "--node-log="+fmt.Sprint(mode == "node-log"))
		if _, err := increment(n.url, "solo"); err != nil { // activation
			b.Fatal(err)
		}
		var lat []time.Duration
		for i := 0; i < writes; i++ {
			l, err := increment(n.url, "solo")
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, l)
		}
		n.kill()
		p := strings.ReplaceAll(mode, "-", "")
		b.ReportMetric(ms(percentile(lat, .5)), p+"-median-ms")
		b.ReportMetric(float64(percentile(lat, .5))/float64(putMedian), p+"-x-put")
	}
}

// openS3At opens the S3 bucket of .ci/run through endpoint (the proxy).
func openS3At(b *testing.B, endpoint string) store.Store {
	b.Helper()
	st, err := openBucket(context.Background(), bucketMux(), fmt.Sprintf("s3://%s?endpoint=%s&path-style=true&region=%s",
		os.Getenv("CELLB_TEST_S3_BUCKET"), endpoint, os.Getenv("CELLB_TEST_S3_REGION")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close(st) })
	return st
}

// BenchmarkNodeLogTakeover: two fleet nodes with peers, TTL
// CELLB_BENCH_TTL (2 s), wake tick 2 s; a counter written through its
// owner, and another counter's alarm set through it, then the owner
// SIGKILLed:
//
//   - takeover: how long until the counter answers through the other node
//     (which first recovers the dead node's log, with the node log);
//   - alarm: how late the alarm, due 3 × TTL after it was set, fires on the
//     other node although nobody calls its cell (the elected waker finds it
//     in the wake index and takes the cell over): the moment its cell's
//     retirement record (wake/retired/<cell>.json) moves after the kill,
//     which its firing commit publishes, read from the bucket without
//     touching the cell.
//
// Goals: the takeover within 2 × TTL + 1 s; the alarm within wake tick +
// TTL + 1 s of its due time. Per mode, the median of 3 trials.
func BenchmarkNodeLogTakeover(b *testing.B) {
	proxy := benchS3(b)
	st := openS3At(b, proxy)
	ttl := 2 * time.Second
	if v, err := time.ParseDuration(os.Getenv("CELLB_BENCH_TTL")); err == nil && v > 0 {
		ttl = v
	}
	tick := 2 * time.Second
	b.ReportMetric(ttl.Seconds(), "ttl-s")
	b.ReportMetric(tick.Seconds(), "wake-tick-s")
	for _, mode := range []string{"per-cell", "node-log"} {
		var moved, late []time.Duration
		for trial := 0; trial < 3; trial++ {
			prefix := fmt.Sprintf("bench-kill-%s-%d-%d", mode, trial, time.Now().UnixNano())
			bucket := fmt.Sprintf("s3://%s/%s", os.Getenv("CELLB_TEST_S3_BUCKET"), prefix)
			args := func(name string) []string {
				return []string{"--bucket", bucket, "--node", name, "--peer-listen", "127.0.0.1:0", "--ttl", ttl.String(),
					"--wake-tick", tick.String(), "--wake-poll", "1s", "--node-log=" + fmt.Sprint(mode == "node-log")}
			}
			a := startBenchNode(b, mode+"-a", args("na")...)
			other := startBenchNode(b, mode+"-b", args("nb")...)
			for i := 0; i < 5; i++ {
				if _, err := increment(a.url, "k"); err != nil {
					b.Fatal(err)
				}
			}
			due := alarmIn(b, a.url, "al", 3*ttl)
			id := cell.IDFromName(defaultScriptName, "Counter", "al")
			retired := prefix + "/" + layout.WakeRetiredKey(cell.CellKey("Counter", id))
			a.kill()
			killed := time.Now()
			before := readOrEmpty(b, st, retired)
			for {
				if _, err := increment(other.url, "k"); err == nil {
					break
				}
				if time.Since(killed) > 30*ttl {
					b.Fatalf("%s: the counter never answered after its owner died (see %s)", mode, other.log)
				}
				time.Sleep(20 * time.Millisecond)
			}
			moved = append(moved, time.Since(killed))
			for string(readOrEmpty(b, st, retired)) == string(before) {
				if time.Since(due) > 30*ttl+10*tick {
					b.Fatalf("%s: the dead owner's alarm never fired (see %s)", mode, other.log)
				}
				time.Sleep(50 * time.Millisecond)
			}
			late = append(late, max(time.Since(due), 0))
			if v := value(b, other.url, "al"); v < 1000 {
				b.Fatalf("%s: the retirement record moved but the alarm did not run (value %d; see %s)", mode, v, other.log)
			}
			other.kill()
		}
		p := strings.ReplaceAll(mode, "-", "")
		b.ReportMetric(percentile(moved, .5).Seconds(), p+"-takeover-s")
		b.ReportMetric(percentile(late, .5).Seconds(), p+"-alarm-late-s")
		b.Logf("%s: takeovers %v, alarms late by %v", mode, moved, late)
	}
}

// readOrEmpty reads key from s, or nothing when it is absent.
func readOrEmpty(b *testing.B, s store.Store, key string) []byte {
	obj, err := s.Get(context.Background(), key)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	return obj.Data
}

// alarmIn sets the counter's alarm in d (through url) and returns when it
// is due.
func alarmIn(b *testing.B, url, counter string, d time.Duration) time.Time {
	b.Helper()
	resp, err := benchClient.Post(fmt.Sprintf("%s/counter/%s/alarm?in=%d", url, counter, d.Milliseconds()), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Alarm int64 }
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		b.Fatalf("alarm: %s", resp.Status)
	}
	return time.UnixMilli(out.Alarm)
}

// value reads a counter (-1 when the read fails).
func value(b *testing.B, url, counter string) int64 {
	resp, err := benchClient.Get(url + "/counter/" + counter)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var out struct{ Value int64 }
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return -1
	}
	return out.Value
}

// BenchmarkNodeLogCost: the bucket requests per acknowledged write that
// docs/cost.md prices, per mode, with 1, 100 and 10,000 cells written by
// 48 clients for CELLB_COST_DURATION (60 s: longer than the node log's
// TierAge, so tiering and bundle deletion are counted), after a warm-up
// that activates every cell. CELLB_COST_CELLS narrows the cell counts
// (e.g. "100").
func BenchmarkNodeLogCost(b *testing.B) {
	benchS3(b)
	d := time.Minute
	if v, err := time.ParseDuration(os.Getenv("CELLB_COST_DURATION")); err == nil && v > 0 {
		d = v
	}
	counts := []int{1, 100, 10000}
	if v := os.Getenv("CELLB_COST_CELLS"); v != "" {
		counts = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			fmt.Sscan(f, &n)
			counts = append(counts, n)
		}
	}
	for _, cells := range counts {
		for _, mode := range []string{"per-cell", "node-log"} {
			b.Run(fmt.Sprintf("cells=%d/%s", cells, mode), func(b *testing.B) {
				// Every cell stays open (--max-cells above the count): the
				// figures are busy cells', not activations'.
				n := startBenchNode(b, mode, "--bucket", s3BenchBucket(fmt.Sprintf("cost-%d-%s", cells, mode)), "--node-log="+fmt.Sprint(mode == "node-log"),
					"--idle", "10m", "--max-cells", fmt.Sprint(cells+100))
				warm(b, n, cells)
				r := load(b, n, 48, cells, d)
				n.kill()
				w := float64(r.acked)
				b.ReportMetric(r.rate(), "writes/s")
				b.ReportMetric(r.puts/w, "puts/write")
				b.ReportMetric(r.gets/w, "gets/write")
				b.ReportMetric(r.lists/w, "lists/write")
				b.ReportMetric(r.deletes/w, "deletes/write")
				b.ReportMetric(float64(r.failed), "failed")
			})
		}
	}
}
