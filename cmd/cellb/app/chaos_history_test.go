package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// historyChaos is one run of the history checker: three `cellb serve`
// processes with peers, clients recording every call to the counter app,
// and the chaos.
type historyChaos struct {
	name  string // the bucket kind, for the summary line: files, s3, ...
	bin   string // the cellb binary
	nodes int    // 3 unless set
	// bucket is node i's bucket URL for its n-th start (from 0): a
	// faulty bucket's seed changes at each start, or a fault at start-up
	// would repeat forever.
	bucket    func(node, start int) string
	serveArgs []string // more flags for every node (CELLB_CHAOS_SERVE_ARGS)
	duration  time.Duration
	seed      uint64
	clients   int
	cells     int           // counters in use at a time
	round     time.Duration // the counters' names change every round
	ttl       time.Duration
	// Chaos actions, each drawn with its weight every 1–2 s: SIGKILL and
	// restart a node; SIGSTOP one past its TTL and resume it; SIGSTOP one
	// for less than a third of the TTL.
	kill, pause, shortPause int
	// firstChaos is when the first action comes (default 1–2 s in).
	firstChaos time.Duration
	dir        string // where the nodes' logs and a failing history go
}

// chaosEvent is something the chaos did, for the summary and the
// visualization.
type chaosEvent struct {
	at   time.Duration
	what string
}

// chaosResult is what a run saw.
type chaosResult struct {
	check                     historyCheck
	kills, pauses, shortPause int
	fencedExits, otherExits   int
	startFailures             int
	outcomes                  map[string]int // answers that were not "ok", by kind
	elapsed                   time.Duration
}

// chaosDuration is CELLB_CHAOS_DURATION, or def.
func chaosDuration(def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv("CELLB_CHAOS_DURATION")); err == nil && v > 0 {
		return v
	}
	return def
}

// chaosSeed is CELLB_CHAOS_SEED, or a seed drawn for this run (logged, so
// a run can be repeated as closely as processes allow).
func chaosSeed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("CELLB_CHAOS_SEED"), 10, 64); err == nil {
		return v
	}
	return uint64(time.Now().UnixNano() % 1_000_000)
}

// chaosServeArgs is CELLB_CHAOS_SERVE_ARGS split at spaces: flags every
// node of the history checker gets, e.g. "--node-log=false".
func chaosServeArgs() []string { return strings.Fields(os.Getenv("CELLB_CHAOS_SERVE_ARGS")) }

// chaosDir is where a run keeps the nodes' logs and, when the history is
// not linearizable, history.json and porcupine's history.html:
// $CELLB_CHAOS_LOGS/<test> when set (always kept), else a temporary
// directory that is removed when the test passes.
func chaosDir(t *testing.T) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")
	if root := os.Getenv("CELLB_CHAOS_LOGS"); root != "" {
		dir := filepath.Join(root, fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "cellb-chaos-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept the nodes' logs and the history in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// run runs the fleet and the clients for the chaos duration, reads every
// counter once more when the chaos is over, and checks the history. It
// fails the test only when the fleet did not serve; the caller judges
// the check.
func (hc *historyChaos) run(t *testing.T) chaosResult {
	t.Helper()
	began := time.Now()
	if hc.clients == 0 {
		hc.clients = 24
	}
	if hc.cells == 0 {
		hc.cells = 8
	}
	if hc.round == 0 {
		hc.round = 20 * time.Second
	}
	if hc.ttl == 0 {
		hc.ttl = 2 * time.Second
	}
	res := chaosResult{outcomes: map[string]int{}}
	var procs []*proc
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
			p.logf.Close()
		}
	})
	// restart starts p until it listens, as a supervisor would: under
	// injected faults the start-up probe or the join can fail.
	starts := map[*proc]int{}
	restart := func(p *proc) {
		t.Helper()
		for attempt := 1; ; attempt++ {
			p.args[2] = hc.bucket(slices.Index(procs, p), starts[p])
			starts[p]++
			err := p.tryStart(hc.bin)
			if err == nil {
				return
			}
			res.startFailures++
			if attempt == 20 {
				t.Fatalf("%s did not start in 20 attempts: %v", p.name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if hc.nodes == 0 {
		hc.nodes = 3
	}
	for i := 0; i < hc.nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		logf, err := os.Create(filepath.Join(hc.dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{name: name, logf: logf, watched: true, args: append([]string{
			"serve", "--bucket", "", "--node", name, "--data", t.TempDir(),
			"--listen", "127.0.0.1:0", "--peer-listen", "127.0.0.1:0", "--ttl", hc.ttl.String(), "--idle", "5s",
		}, hc.serveArgs...)}
		procs = append(procs, p)
		restart(p)
	}

	// view is what the clients know of the nodes: each one's URL, or ""
	// while it is down. A paused node stays in view: its clients wait.
	var mu sync.Mutex
	view := make([]string, len(procs))
	for i, p := range procs {
		view[i] = p.url
	}
	setView := func(i int, url string) {
		mu.Lock()
		view[i] = url
		mu.Unlock()
	}
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	var calls []counterCall
	used := map[string]bool{}
	record := func(c counterCall, outcome string) {
		mu.Lock()
		defer mu.Unlock()
		if outcome != "ok" {
			res.outcomes[outcome]++
		}
		if c.Outcome != "" {
			calls = append(calls, c)
		}
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}

	ctx, stop := context.WithTimeout(context.Background(), hc.duration)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for w := 0; w < hc.clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(hc.seed, uint64(w)))
			for ctx.Err() == nil {
				i := r.IntN(len(view))
				mu.Lock()
				url := view[i]
				mu.Unlock()
				if url == "" {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				cell := fmt.Sprintf("h%d-%d", time.Since(start)/hc.round, r.IntN(hc.cells))
				mu.Lock()
				used[cell] = true
				mu.Unlock()
				record(callCounter(client, url, w, cell, r.IntN(10) < 7, since))
			}
		}()
	}

	// The chaos, on this goroutine: every 1–2 s restart the nodes that
	// exited by themselves, then draw an action.
	var events []chaosEvent
	event := func(format string, args ...any) {
		events = append(events, chaosEvent{at: time.Since(start), what: fmt.Sprintf(format, args...)})
	}
	restartExited := func() {
		for i, p := range procs {
			if !p.exitedByItself() {
				continue
			}
			setView(i, "")
			var ee *exec.ExitError
			if errors.As(p.exitErr, &ee) && ee.ExitCode() == exitFenced {
				res.fencedExits++
				event("%s exited with status 3 (self-fenced); restarting it", p.name)
			} else {
				res.otherExits++
				event("%s exited by itself (%v; see %s); restarting it", p.name, p.exitErr, p.logf.Name())
				t.Logf("%s exited by itself: %v (see %s)", p.name, p.exitErr, p.logf.Name())
			}
			p.kill()
			restart(p)
			setView(i, p.url)
		}
	}
	// wait waits d (or until the chaos ends), restarting exited nodes
	// every 100 ms meanwhile.
	wait := func(d time.Duration) {
		for end := time.Now().Add(d); ctx.Err() == nil; {
			restartExited()
			left := time.Until(end)
			if left <= 0 {
				return
			}
			time.Sleep(min(left, 100*time.Millisecond))
		}
	}
	r := rand.New(rand.NewPCG(hc.seed, 1<<32))
	total := hc.kill + hc.pause + hc.shortPause
	next := hc.firstChaos
	for ctx.Err() == nil {
		if next == 0 {
			next = time.Duration(1000+r.IntN(1000)) * time.Millisecond
		}
		wait(next)
		next = 0
		if ctx.Err() != nil || total == 0 {
			continue
		}
		i := r.IntN(len(procs))
		p := procs[i]
		switch n := r.IntN(total); {
		case n < hc.kill:
			res.kills++
			event("SIGKILL %s", p.name)
			setView(i, "")
			p.kill()
			time.Sleep(300 * time.Millisecond)
			restart(p)
			event("%s restarted", p.name)
			setView(i, p.url)
		case n < hc.kill+hc.pause:
			res.pauses++
			d := hc.ttl + time.Duration(r.IntN(1500))*time.Millisecond
			event("SIGSTOP %s for %v (past its TTL)", p.name, d)
			p.signal(syscall.SIGSTOP)
			wait(d)
			p.signal(syscall.SIGCONT)
			event("SIGCONT %s", p.name)
		default:
			res.shortPause++
			d := time.Duration(r.IntN(int(hc.ttl/3/time.Millisecond))) * time.Millisecond
			event("SIGSTOP %s for %v (within its TTL)", p.name, d)
			p.signal(syscall.SIGSTOP)
			time.Sleep(d)
			p.signal(syscall.SIGCONT)
		}
	}
	<-ctx.Done()
	wg.Wait()

	// Every counter read once more through any node, after the chaos: the
	// last word on what the fleet kept.
	time.Sleep(hc.ttl)
	restartExited()
	for _, cell := range slices.Sorted(maps.Keys(used)) {
		deadline := time.Now().Add(30 * time.Second)
		for n := 0; ; n++ {
			outcome := "no node is up"
			if url := view[n%len(view)]; url != "" {
				var c counterCall
				if c, outcome = callCounter(client, url, 1000, cell, false, since); outcome == "ok" {
					calls = append(calls, c)
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("counter %s cannot be read 30 s after the chaos (last answer: %s)", cell, outcome)
			}
			time.Sleep(50 * time.Millisecond)
			restartExited()
		}
	}
	for _, p := range procs {
		p.kill()
	}
	res.check = checkCounterHistory(t, calls, 30*time.Second, hc.dir)
	if !res.check.ok() {
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "%8.3fs %s\n", e.at.Seconds(), e.what)
		}
		_ = os.WriteFile(filepath.Join(hc.dir, "chaos.txt"), []byte(b.String()), 0o644)
	}
	res.elapsed = time.Since(began)
	if res.check.Acked < 50 {
		t.Fatalf("only %d acknowledged increments: the fleet was not serving (%v)", res.check.Acked, res.outcomes)
	}
	return res
}

// summary is the run's one-line report; scripts/chaos-long.sh greps for
// its "history-check:" prefix.
func (hc *historyChaos) summary(res chaosResult) string {
	kinds := make([]string, 0, len(res.outcomes))
	for k, n := range res.outcomes {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("history-check: bucket=%s seed=%d chaos=%v args=%q %v kills=%d pauses=%d short-pauses=%d fenced-exits=%d other-exits=%d start-failures=%d elapsed=%v not-ok=[%s]",
		hc.name, hc.seed, hc.duration, strings.Join(hc.serveArgs, " "), res.check, res.kills, res.pauses, res.shortPause,
		res.fencedExits, res.otherExits, res.startFailures, res.elapsed.Round(time.Second), strings.Join(kinds, " "))
}

// callCounter makes one call and classifies its answer. outcome is "ok",
// "not applied: ..." (the call provably did not run: the connection was
// refused, or the answer carries X-Cellb-Not-Applied, docs/fleet.md) or
// "unknown: ..." (it may have run: a timeout, a reset connection, any
// other answer). The call is recorded (its Outcome set) when it is ok, or
// an increment of unknown outcome; a failed read or a call that did not
// run tells nothing.
func callCounter(client *http.Client, base string, who int, cell string, inc bool, since func() int64) (counterCall, string) {
	c := counterCall{Client: who, Cell: cell, Inc: inc}
	method := http.MethodGet
	if inc {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, base+"/counter/"+cell, nil)
	if err != nil {
		panic(err)
	}
	c.Call = since()
	resp, err := client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	ret := since()
	var outcome string
	switch {
	case err != nil && dialRefused(err):
		return c, "not applied: connection refused"
	case err != nil:
		outcome = "unknown: " + errKind(err)
	case resp.Header.Get("X-Cellb-Not-Applied") != "":
		return c, fmt.Sprintf("not applied: %d %s", resp.StatusCode, resp.Header.Get("X-Cellb-Not-Applied"))
	case resp.StatusCode != http.StatusOK:
		outcome = fmt.Sprintf("unknown: %d %s", resp.StatusCode, answerKind(body))
	default:
		var v struct {
			Value *int64 `json:"value"`
		}
		if json.Unmarshal(body, &v) != nil || v.Value == nil {
			outcome = fmt.Sprintf("unknown: bad body %q", body)
			break
		}
		c.Value, c.Return, c.Outcome = *v.Value, ret, "ok"
		c.Node, c.Epoch = resp.Header.Get("X-Cellb-Node"), resp.Header.Get("X-Cellb-Epoch")
		return c, "ok"
	}
	if inc {
		c.Return, c.Outcome = unknownReturn, outcome
	}
	return c, outcome
}

// dialRefused reports whether err is a failure to connect: nothing was
// sent.
func dialRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// errKind names a transport error briefly, for the tally.
func errKind(err error) string {
	var ne net.Error
	switch msg := err.Error(); {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(msg, "connection reset"):
		return "connection reset"
	case strings.Contains(msg, "EOF"):
		return "EOF"
	case strings.Contains(msg, "server closed idle connection"):
		return "server closed idle connection"
	default:
		return msg
	}
}

var hexRun = regexp.MustCompile(`[0-9a-f]{16,}|\d+`)

// answerKind is an error answer's first line with ids and numbers blanked,
// so answers of one kind count together.
func answerKind(body []byte) string {
	line, _, _ := strings.Cut(string(body), "\n")
	if len(line) > 90 {
		line = line[:90]
	}
	return hexRun.ReplaceAllString(line, "#")
}

// TestFleetHistoryIsLinearizable runs the history checker on a local-files
// bucket: three `cellb serve` processes (built with the faultfile scheme,
// faultbucket_test.go) whose every bucket request may be delayed, fail,
// be lost on the way (not applied, told "ambiguous") or lose its answer
// (applied, told "ambiguous"), while 24 clients increment and read 8
// counters at a time through any node and nodes are SIGKILLed and
// restarted, or SIGSTOPped past their TTL (or briefly) and resumed; a node
// that exits by itself (status 3 after self-fencing) is restarted. Every
// counter's history must be linearizable. CELLB_CHAOS_DURATION (60 s),
// CELLB_CHAOS_SEED, CELLB_CHAOS_SERVE_ARGS, CELLB_CHAOS_FILE_FAULTS (the
// faultfile query) and CELLB_CHAOS_LOGS adjust it (scripts/chaos-long.sh).
func TestFleetHistoryIsLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test skipped in -short mode")
	}
	faults := os.Getenv("CELLB_CHAOS_FILE_FAULTS")
	if faults == "" {
		faults = "fail=0.01&drop=0.005&lose=0.01&latency=1ms&jitter=4ms"
	}
	hc := &historyChaos{name: "files", bin: faultCellbBinary(t), duration: chaosDuration(60 * time.Second),
		seed: chaosSeed(), serveArgs: chaosServeArgs(), kill: 4, pause: 4, shortPause: 2, dir: chaosDir(t)}
	bucketDir := t.TempDir()
	hc.bucket = func(node, start int) string {
		return fmt.Sprintf("faultfile://%s?seed=%d&%s", bucketDir, hc.seed*1000+uint64(node*100+start), faults)
	}
	hc.checkLinearizable(t, hc.run(t))
}

// TestFleetHistoryIsLinearizableS3 runs the history checker on the S3
// server of .ci/run (versitygw) behind scripts/faultproxy, which delays
// every request, answers some 500 without forwarding them, forwards some
// PUTs and DELETEs and then answers 500 or resets the connection, and
// holds a few requests past the nodes' patience. CELLB_CHAOS_PROXY_ARGS
// replaces the proxy's fault flags.
func TestFleetHistoryIsLinearizableS3(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test skipped in -short mode")
	}
	endpoint := useS3(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "") // each node is given its proxy's
	hc := &historyChaos{name: "s3", bin: cellbBinary(t), duration: chaosDuration(60 * time.Second),
		seed: chaosSeed(), serveArgs: chaosServeArgs(), kill: 4, pause: 4, shortPause: 2, dir: chaosDir(t)}
	flags := strings.Fields(os.Getenv("CELLB_CHAOS_PROXY_ARGS"))
	if len(flags) == 0 {
		flags = []string{"-latency", "2ms", "-jitter", "8ms", "-fail", "0.01", "-fail-after-apply", "0.02",
			"-reset-after-apply", "0.005", "-stall", "0.002", "-stall-for", "4s"}
	}
	proxy := startFaultProxy(t, endpoint, append(flags, "-seed", strconv.FormatUint(hc.seed, 10))...)
	bucket := fmt.Sprintf("s3://%s/history-%d?endpoint=%s", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano(), proxy.url)
	hc.bucket = func(int, int) string { return bucket }
	res := hc.run(t)
	t.Logf("faultproxy: %+v", proxy.stats(t))
	hc.checkLinearizable(t, res)
}

// checkLinearizable logs the run's summary and fails the test when a
// counter's history is not linearizable.
func (hc *historyChaos) checkLinearizable(t *testing.T, res chaosResult) {
	t.Helper()
	t.Log(hc.summary(res))
	if !res.check.ok() {
		t.Fatalf("the fleet's history is not linearizable: %v\nvisualization: %s\nnodes' logs, history.json and chaos.txt: %s\nREPORT THIS (seed %d): every violation becomes a named regression test",
			res.check, strings.Join(res.check.Visualizations, " "), hc.dir, hc.seed)
	}
}

// TestHistoryCheckerCatchesSplitBrain is the checker's negative twin for a
// fleet whose ownership is broken: one of the three nodes is pointed at a
// second bucket, so it owns every counter a second time. Its clients see
// two counters under one name, which the checker must call not
// linearizable.
func TestHistoryCheckerCatchesSplitBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	shared, other := t.TempDir(), t.TempDir()
	hc := &historyChaos{name: "files-split-brain", bin: cellbBinary(t), duration: 3 * time.Second, seed: chaosSeed(),
		serveArgs: chaosServeArgs(), dir: chaosDir(t), bucket: func(node, _ int) string {
			if node == 2 {
				return "file://" + other
			}
			return "file://" + shared
		}}
	hc.expectCaught(t, hc.run(t))
}

// TestHistoryCheckerCatchesAckBeforeDurability is the checker's negative
// twin for a fleet that acknowledges writes before they are durable:
// `--durability backup` acknowledges every commit at once and saves the
// database every minute (docs/durability.md), so a SIGKILLed owner's
// counters come back on another node without what it acknowledged.
func TestHistoryCheckerCatchesAckBeforeDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bucketDir := t.TempDir()
	hc := &historyChaos{name: "files-backup-mode", bin: cellbBinary(t), duration: 6 * time.Second, seed: chaosSeed(),
		serveArgs: append(chaosServeArgs(), "--durability", "backup"), kill: 1, firstChaos: 2 * time.Second, dir: chaosDir(t),
		bucket: func(int, int) string { return "file://" + bucketDir }}
	hc.expectCaught(t, hc.run(t))
}

// expectCaught fails the test unless the checker found a counter whose
// history is not linearizable and drew it.
func (hc *historyChaos) expectCaught(t *testing.T, res chaosResult) {
	t.Helper()
	t.Log(hc.summary(res))
	if len(res.check.Illegal) == 0 {
		t.Fatalf("the checker did not catch a broken fleet: %v", res.check)
	}
	if len(res.check.Visualizations) == 0 || !fileHas(t, res.check.Visualizations[0], "<html") {
		t.Fatalf("no visualization: %q", res.check.Visualizations)
	}
}
