package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// The process figures of issue 13: a cell of a given size opened, written
// and read in a process of its own (so its resident memory is the
// process's), then `cellb restore` of it, in a child process whose peak
// resident memory the kernel reports (rusage's maxrss).

const bigBlob = 1 << 20 // one row, one commit

// bigCellReport is what the helper process prints, on one line.
type bigCellReport struct {
	Cell       string `json:"cell"`
	Bucket     string `json:"bucket"`
	RSSBefore  int64  `json:"rss_before"`  // after a first small cell, before the big one
	RSSWritten int64  `json:"rss_written"` // after writing and reading it
	RSSAfter   int64  `json:"rss_after"`   // after reopening it in a new runtime, reading it all and writing once more
	Bytes      int64  `json:"bytes"`       // read back, each time
	HeapBefore int64  `json:"heap_before"` // live Go heap (after a collection) at RSSBefore
	HeapAfter  int64  `json:"heap_after"`  // and at RSSAfter
	// PhaseRSS and PhaseHeap are the peaks, sampled every 2 ms, of the
	// resident set and of the Go heap's objects (live and not yet
	// collected) in each phase: write, read, reopen, read again, write
	// once more (the new epoch's snapshot).
	PhaseRSS  []int64 `json:"phase_rss"`
	PhaseHeap []int64 `json:"phase_heap"`
}

// phasePeaks samples the resident set and the heap's objects every 2 ms
// and keeps each phase's peak.
type phasePeaks struct {
	mu        sync.Mutex
	phase     int
	rss, heap []int64
	stop      chan struct{}
	done      chan struct{}
}

func startPhasePeaks(phases int) *phasePeaks {
	p := &phasePeaks{rss: make([]int64, phases), heap: make([]int64, phases), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			r := rssBytes()
			p.mu.Lock()
			p.rss[p.phase] = max(p.rss[p.phase], r)
			p.heap[p.phase] = max(p.heap[p.phase], int64(sample[0].Value.Uint64()))
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *phasePeaks) next() {
	p.mu.Lock()
	p.phase++
	p.mu.Unlock()
}

func (p *phasePeaks) end() ([]int64, []int64) {
	close(p.stop)
	<-p.done
	return p.rss, p.heap
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func fillBig(ctx context.Context, c *benchCell) (int64, error) {
	_, err := c.st.SQL().Exec(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS b(id INTEGER PRIMARY KEY, data BLOB NOT NULL); INSERT INTO b(data) VALUES (randomblob(%d))", bigBlob))
	return 0, err
}

func readBig(ctx context.Context, c *benchCell) (int64, error) {
	rows, err := c.st.SQL().Query(ctx, "SELECT data FROM b")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return n, err
		}
		n += int64(len(data))
	}
	return n, rows.Err()
}

// TestBigCellHelper is the child process: it runs only when
// CELLB_BIGCELL_DIR is set (by runBigCell), builds a cell of
// CELLB_BIGCELL_MIB MiB there on the embedded default (wasm,
// local-primary, LTX log on a local-files bucket) and prints a
// bigCellReport.
func TestBigCellHelper(t *testing.T) {
	dir := os.Getenv("CELLB_BIGCELL_DIR")
	if dir == "" {
		t.Skip("the child process of TestLargeCellProcessMemory and BenchmarkLargeCell")
	}
	mib := envInt("CELLB_BIGCELL_MIB", 16)
	ctx := context.Background()
	var rep bigCellReport
	e := openEmbedded(t, dir, embeddedWasm())
	if _, err := cell.Call(ctx, e.ns.Get(e.ns.IDFromName("warm")), benchWrite); err != nil {
		t.Fatal(err)
	}
	rep.HeapBefore = liveHeap()
	rep.RSSBefore = rssBytes()
	big := e.ns.Get(e.ns.IDFromName("big"))
	rep.Cell = "Bench:" + e.ns.IDFromName("big").String()
	peaks := startPhasePeaks(5)
	for range mib * (1 << 20) / bigBlob {
		if _, err := cell.Call(ctx, big, fillBig); err != nil {
			t.Fatal(err)
		}
	}
	peaks.next()
	n, err := cell.Call(ctx, big, readBig)
	if err != nil {
		t.Fatal(err)
	}
	rep.RSSWritten = rssBytes()
	peaks.next()
	e.close()
	// A new runtime opens the existing cell: what a restart does.
	e = openEmbedded(t, dir, embeddedWasm())
	defer e.close()
	big = e.ns.Get(e.ns.IDFromName("big"))
	peaks.next()
	if rep.Bytes, err = cell.Call(ctx, big, readBig); err != nil {
		t.Fatal(err)
	}
	if rep.Bytes != n {
		t.Fatalf("read %d bytes after reopening, %d before", rep.Bytes, n)
	}
	peaks.next()
	if _, err := cell.Call(ctx, big, fillBig); err != nil {
		t.Fatal(err)
	}
	rep.PhaseRSS, rep.PhaseHeap = peaks.end()
	rep.RSSAfter = rssBytes()
	rep.HeapAfter = liveHeap()
	if p := os.Getenv("CELLB_BIGCELL_HEAPPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	rep.Bucket = filepath.Join(dir, "bucket")
	line, _ := json.Marshal(rep)
	fmt.Printf("BIGCELL %s\n", line)
}

// runBigCell runs TestBigCellHelper in a child process and returns its
// report and peak resident memory.
func runBigCell(t testing.TB, dir string, mib int) (bigCellReport, int64) {
	t.Helper()
	cmd, peak := peakCommand(os.Args[0], "-test.run=^TestBigCellHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CELLB_BIGCELL_DIR="+dir, fmt.Sprintf("CELLB_BIGCELL_MIB=%d", mib))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var rep bigCellReport
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	found := false
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "BIGCELL "); ok {
			if err := json.Unmarshal([]byte(rest), &rep); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("helper printed no report:\n%s", out)
	}
	return rep, peak()
}

// maxRSS is a finished child's peak resident memory, in bytes, as the
// kernel reports it to wait4. Beware: Go starts children with vfork, so
// the child shares this process's memory until it execs, and the kernel
// keeps that memory's high-water mark in the child's maxrss: a child
// started from a process of 160 MiB reports at least 160 MiB. peakOf
// avoids it.
func maxRSS(cmd *exec.Cmd) int64 {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// peakCommand wraps a command so its own peak resident memory can be read
// after it ran: through GNU time (/usr/bin/time), which forks the command
// from its own small process, so the figure is the command's alone. read
// returns it in bytes; without /usr/bin/time it falls back to maxRSS,
// which is then at least this process's peak.
func peakCommand(name string, args ...string) (cmd *exec.Cmd, read func() int64) {
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		cmd = exec.Command(name, args...)
		return cmd, func() int64 { return maxRSS(cmd) }
	}
	f, err := os.CreateTemp("", "cellb-peak-")
	if err != nil {
		cmd = exec.Command(name, args...)
		return cmd, func() int64 { return maxRSS(cmd) }
	}
	f.Close()
	cmd = exec.Command(gnuTime, append([]string{"-f", "%M", "-o", f.Name(), name}, args...)...)
	return cmd, func() int64 {
		defer os.Remove(f.Name())
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return maxRSS(cmd)
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			return maxRSS(cmd)
		}
		kib, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
		if err != nil {
			return maxRSS(cmd)
		}
		return kib * 1024
	}
}

// timedRun runs a command and returns its wall time and peak memory.
func timedRun(t testing.TB, name string, args ...string) (time.Duration, int64) {
	t.Helper()
	cmd, peak := peakCommand(name, args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return d, peak()
}

const mib = 1 << 20

// TestLargeCellProcessMemory (not timed): a process that opens, writes,
// reads, reopens and writes a cell of 16 MiB (and, with
// CELLB_MEMTEST_MIB=200, of 200 MiB too) on the embedded default grows its
// resident memory by at most processBound (the issue's goal). `cellb
// restore` of that cell peaks at most at restorePeak (the issue's goal,
// counted from nothing: the binary's pages and the Go runtime included)
// and at most restoreBound above what the cellb binary holds doing
// nothing (`cellb --help`, about 37 MiB here): its own working set is two
// 1 MiB write batches, a 256 KiB read buffer and one page, so the rest is
// headroom. The larger size may grow by at most sizeSlack more than the
// smaller: 20 MiB (measured, 200 MiB against 16 MiB: 6.4–15.4 MiB more
// in 13 runs since compaction merges only the level-0 run, 4.9–20.3 in 5
// runs before). The helper reports each phase's peak (phasePeaks). A process's peak is read through GNU time (see peakCommand),
// of a copied binary (see copyBinary).
func TestLargeCellProcessMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cellb and writes a 16 MiB cell")
	}
	const processBound = 64 * mib
	const restorePeak = 64 * mib
	const restoreBound = 16 * mib
	const sizeSlack = 20 * mib
	sizes := []int{16}
	if v := envInt("CELLB_MEMTEST_MIB", 0); v > 16 {
		sizes = append(sizes, v)
	}
	bin := cellbBinary(t)
	_, idle := timedRun(t, bin, "--help")
	var growth, restoreGrowth []int64
	for _, size := range sizes {
		dir := t.TempDir()
		rep, peak := runBigCell(t, dir, size)
		g := max(peak, rep.RSSWritten, rep.RSSAfter) - rep.RSSBefore
		out := filepath.Join(dir, "restored.db")
		_, rpeak := timedRun(t, bin, "restore", "--quiet", rep.Bucket, rep.Cell, out)
		st, err := os.Stat(out)
		if err != nil || st.Size() < int64(size)*mib {
			t.Fatalf("%d MiB: cellb restore wrote %v (%v)", size, st, err)
		}
		rg := rpeak - idle
		var phases []string
		for i, name := range []string{"write", "read", "reopen", "read again", "write once more"} {
			if i < len(rep.PhaseRSS) {
				phases = append(phases, fmt.Sprintf("%s %.1f MiB (heap %.1f)", name, mb(rep.PhaseRSS[i]-rep.RSSBefore), mb(rep.PhaseHeap[i])))
			}
		}
		t.Logf("%d MiB cell: peak growth by phase: %s", size, strings.Join(phases, ", "))
		t.Logf("%d MiB cell: RSS before %.1f MiB, peak %.1f MiB (growth %.1f MiB), after writing %.1f MiB, after reopening %.1f MiB; cellb restore peak %.1f MiB (cellb --help %.1f MiB: growth %.1f MiB)",
			size, mb(rep.RSSBefore), mb(peak), mb(g), mb(rep.RSSWritten), mb(rep.RSSAfter), mb(rpeak), mb(idle), mb(rg))
		if g > processBound {
			t.Errorf("%d MiB cell: the process grew by %.1f MiB, bound %d MiB", size, mb(g), processBound/mib)
		}
		if rpeak > restorePeak {
			t.Errorf("%d MiB cell: cellb restore peaked at %.1f MiB, bound %d MiB", size, mb(rpeak), restorePeak/mib)
		}
		if rg > restoreBound {
			t.Errorf("%d MiB cell: cellb restore peaked %.1f MiB above cellb --help, bound %d MiB", size, mb(rg), restoreBound/mib)
		}
		growth = append(growth, g)
		restoreGrowth = append(restoreGrowth, rg)
	}
	if n := len(sizes) - 1; n > 0 {
		if growth[n] > growth[0]+sizeSlack {
			t.Errorf("the process grew by %.1f MiB with %d MiB, %.1f MiB with %d MiB: it grows with the size", mb(growth[n]), sizes[n], mb(growth[0]), sizes[0])
		}
		if restoreGrowth[n] > restoreGrowth[0]+sizeSlack {
			t.Errorf("cellb restore grew by %.1f MiB for %d MiB, %.1f MiB for %d MiB: it grows with the size", mb(restoreGrowth[n]), sizes[n], mb(restoreGrowth[0]), sizes[0])
		}
	}
}

func mb(n int64) float64 { return float64(n) / mib }

// litestreamBinary is a litestream v0.5 binary: $CELLB_LITESTREAM, or
// litestream on PATH; "" when there is none (the comparison is skipped).
func litestreamBinary() string {
	if p := os.Getenv("CELLB_LITESTREAM"); p != "" {
		return p
	}
	p, _ := exec.LookPath("litestream")
	return p
}

// litestreamReplica lays the cell's LTX log out as a litestream file
// replica (<dir>/ltx/<level>/<min>-<max>.ltx, the same files byte for
// byte) and returns its URL.
func litestreamReplica(t testing.TB, bucketDir, cellKey, dir string) string {
	t.Helper()
	ctx := context.Background()
	s, err := fsstore.Open(bucketDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	prefix := ltx.CellPrefix(cellKey)
	var token, epochDir string
	n := 0
	for {
		page, err := s.List(ctx, store.ListOptions{Prefix: prefix, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range page.Objects {
			// e<epoch>/<level:04x>/<min>-<max>.ltx
			parts := strings.Split(strings.TrimPrefix(obj.Key, prefix), "/")
			if len(parts) != 3 {
				t.Fatalf("unexpected key %s", obj.Key)
			}
			// One epoch's chain (e0 without ownership): a replica holds
			// one generation.
			if epochDir == "" {
				epochDir = parts[0]
			} else if parts[0] != epochDir {
				t.Fatalf("%s: a second epoch beside %s", obj.Key, epochDir)
			}
			level, err := strconv.ParseUint(parts[1], 16, 8)
			if err != nil {
				t.Fatal(err)
			}
			o, err := s.Get(ctx, obj.Key)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "ltx", strconv.Itoa(int(level)), parts[2])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, o.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	if n == 0 {
		t.Fatal("no LTX files to lay out")
	}
	return "file://" + dir
}

func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLargeCell: a cell of CELLB_BENCH_BIGCELL_MIB MiB (200) opened,
// written, read, reopened, read and written in a process of its own on the
// embedded default: the process's resident memory before the cell, at its
// peak and at the end (goal: at most +64 MiB whatever the size). Then a
// restore of that cell to a file by `cellb restore` and, in the same run,
// by `litestream restore` (v0.5; $CELLB_LITESTREAM or on PATH; skipped when
// absent) from the same LTX files laid out as a litestream file replica,
// alternately, CELLB_BENCH_ROUNDS times (5): medians of wall time and peak
// resident memory. Beside them, the peak of `cellb --help` (what the
// binary costs doing nothing) and a copy of the restored file (cp).
// BenchmarkRestoreVsLitestream is the same at 47 MiB, the size.
func BenchmarkLargeCell(b *testing.B) {
	benchLargeCell(b, envInt("CELLB_BENCH_BIGCELL_MIB", 200))
}

// BenchmarkRestoreVsLitestream: BenchmarkLargeCell at 47 MiB.
func BenchmarkRestoreVsLitestream(b *testing.B) { benchLargeCell(b, 47) }

func benchLargeCell(b *testing.B, size int) {
	bin := cellbBinary(b)
	dir := b.TempDir()
	rep, peak := runBigCell(b, dir, size)
	b.Run("process", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(mb(rep.RSSBefore), "MiB-rss-before")
		b.ReportMetric(mb(peak-rep.RSSBefore), "MiB-peak-growth")
		b.ReportMetric(mb(rep.RSSAfter-rep.RSSBefore), "MiB-end-growth")
		b.ReportMetric(float64(rep.Bytes)/mib, "MiB-cell-data")
		b.ReportMetric(mb(rep.HeapAfter-rep.HeapBefore), "MiB-heap-growth")
	})
	ls := litestreamBinary()
	var replica string
	if ls != "" {
		replica = litestreamReplica(b, rep.Bucket, rep.Cell, filepath.Join(dir, "replica"))
	}
	rounds := envInt("CELLB_BENCH_ROUNDS", 5)
	type figures struct {
		wall []time.Duration
		peak []int64
	}
	var cb, lt, idle, cp figures
	restored := filepath.Join(dir, "cellb.db")
	for range rounds {
		w, p := timedRun(b, bin, "restore", "--quiet", "--force", rep.Bucket, rep.Cell, restored)
		cb.wall, cb.peak = append(cb.wall, w), append(cb.peak, p)
		if ls != "" {
			out := filepath.Join(dir, "litestream.db")
			os.Remove(out)
			w, p := timedRun(b, ls, "restore", "-o", out, replica)
			lt.wall, lt.peak = append(lt.wall, w), append(lt.peak, p)
		}
		w, p = timedRun(b, bin, "--help")
		idle.wall, idle.peak = append(idle.wall, w), append(idle.peak, p)
		w, p = timedRun(b, "cp", restored, filepath.Join(dir, "copy.db"))
		cp.wall, cp.peak = append(cp.wall, w), append(cp.peak, p)
	}
	st, err := os.Stat(restored)
	if err != nil {
		b.Fatal(err)
	}
	report := func(name string, f figures) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
			}
			if len(f.wall) == 0 {
				b.Skip("no litestream binary: set CELLB_LITESTREAM or put litestream v0.5 on PATH")
			}
			b.ReportMetric(float64(median(f.wall).Microseconds())/1000, "ms-wall")
			b.ReportMetric(mb(median(f.peak)), "MiB-peak")
			b.ReportMetric(mb(st.Size()), "MiB-db")
		})
	}
	report("cellb-restore", cb)
	report("litestream-restore", lt)
	report("cellb-idle", idle)
	report("cp", cp)
}
