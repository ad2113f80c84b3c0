// Command benchscale reads the output of scripts/bench-scale.sh (go test
// benchmark lines and "# load" lines) and prints issue 13's goal table in
// Markdown: each goal, its baseline from the same run, the measured figure
// and whether it is met. Figures of a benchmark run several times (-count)
// are medians. Standard library only, so it runs without the workspace.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// figures maps a benchmark name (without the -N CPU suffix) and a unit to
// every value the run reported for it.
type figures map[string]map[string][]float64

var cpuSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (figures, []float64, error) {
	f := figures{}
	var loads []float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# load "); ok {
			// "# load <time> <1-minute> <5-minute> <15-minute>"
			fs := strings.Fields(rest)
			if len(fs) >= 2 {
				if v, err := strconv.ParseFloat(fs[1], 64); err == nil {
					loads = append(loads, v)
				}
			}
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 4 {
			continue
		}
		name := cpuSuffix.ReplaceAllString(fs[0], "")
		if f[name] == nil {
			f[name] = map[string][]float64{}
		}
		// fs[1] is the iteration count; then value/unit pairs.
		for i := 2; i+1 < len(fs); i += 2 {
			v, err := strconv.ParseFloat(fs[i], 64)
			if err != nil {
				continue
			}
			f[name][fs[i+1]] = append(f[name][fs[i+1]], v)
		}
	}
	return f, loads, sc.Err()
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// get returns the median of name's unit, and whether the run reported it.
func (f figures) get(name, unit string) (float64, bool) {
	vs := f[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

type row struct {
	what, goal, baseline, measured, met string
}

func yes(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "no"
}

func num(v float64) string {
	switch {
	case v >= 100:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func groupThousands(s string) string {
	if len(s) <= 3 {
		return s
	}
	return groupThousands(s[:len(s)-3]) + "," + s[len(s)-3:]
}

const missing = "not in this run"

func table(f figures) []row {
	var rows []row
	// Memory of a 200 MiB cell, in a process of its own.
	if v, ok := f.get("BenchmarkLargeCell/process", "MiB-peak-growth"); ok {
		size, _ := f.get("BenchmarkLargeCell/process", "MiB-cell-data")
		rows = append(rows, row{fmt.Sprintf("resident memory growth, open + write + read a %.0f MiB cell", size), "≤ +64 MiB", "—", "+" + num(v) + " MiB peak", yes(v <= 64)})
	} else {
		rows = append(rows, row{"resident memory growth of a 200 MiB cell", "≤ +64 MiB", "—", missing, "—"})
	}
	// Restore: peak memory and time against litestream, 47 MiB cell.
	cbPeak, ok1 := f.get("BenchmarkRestoreVsLitestream/cellb-restore", "MiB-peak")
	lsPeak, ok2 := f.get("BenchmarkRestoreVsLitestream/litestream-restore", "MiB-peak")
	cbWall, ok3 := f.get("BenchmarkRestoreVsLitestream/cellb-restore", "ms-wall")
	lsWall, ok4 := f.get("BenchmarkRestoreVsLitestream/litestream-restore", "ms-wall")
	if ok1 {
		base := missing
		if ok2 {
			base = "litestream " + num(lsPeak) + " MiB"
		}
		rows = append(rows, row{"peak memory of `cellb restore`, 47 MiB cell", "≤ 64 MiB", base, num(cbPeak) + " MiB", yes(cbPeak <= 64)})
	}
	if ok3 && ok4 {
		r := lsWall / cbWall
		rows = append(rows, row{"restore time, 47 MiB cell", "≥ 2× faster than litestream", "litestream " + num(lsWall) + " ms", num(cbWall) + " ms (" + fmt.Sprintf("%.2f×", r) + ")", yes(r >= 2)})
	}
	// Activations, beside the driver alone in the same run.
	base := missing
	if b1, ok := f.get("BenchmarkActivationsByKind/driver/callers=1", "activations/s"); ok {
		b8, _ := f.get("BenchmarkActivationsByKind/driver/callers=8", "activations/s")
		base = "driver alone " + num(b1) + " / " + num(b8)
	}
	for _, kind := range []struct {
		name, what, goal string
		min              float64
	}{
		{"existing", "existing cells (embedded default)", "≥ 5,000/s with 8 callers", 5000},
		{"existing-exclusive", "existing cells (`wasm.WithExclusiveLocking`)", "≥ 5,000/s with 8 callers", 5000},
		{"new", "new cells", "≥ 2,000/s with 8 callers", 2000},
	} {
		one, ok1 := f.get("BenchmarkActivationsByKind/"+kind.name+"/callers=1", "activations/s")
		eight, ok8 := f.get("BenchmarkActivationsByKind/"+kind.name+"/callers=8", "activations/s")
		if ok1 && ok8 {
			rows = append(rows, row{"activations/s of " + kind.what + ", wasm, 1 / 8 callers", kind.goal, base, num(one) + " / " + num(eight), yes(eight >= kind.min)})
		}
	}
	// Idle cells: held connections (every open cell before
	// IdleConnTimeout) and released ones.
	for _, d := range []struct {
		name string
		max  float64
	}{{"wasm", 100}, {"cgo", 64}} {
		for _, conn := range []string{"held", "released"} {
			stored, ok1 := f.get("BenchmarkIdleCellsByKind/"+d.name+"/stored/"+conn, "KiB-rss/cell")
			fresh, ok2 := f.get("BenchmarkIdleCellsByKind/"+d.name+"/new/"+conn, "KiB-rss/cell")
			if ok1 && ok2 {
				rows = append(rows, row{"resident memory per idle open cell, " + d.name + ", connection " + conn + " (stored / never written)", fmt.Sprintf("≤ %.0f KiB", d.max), "—", num(stored) + " / " + num(fresh) + " KiB", yes(stored <= d.max && fresh <= d.max)})
			}
		}
	}
	// Acknowledged writes.
	for _, n := range []int{1, 64} {
		raw, ok := f.get(fmt.Sprintf("BenchmarkAckedWrites/raw-sqlite-full/callers=%d", n), "ops/s")
		if !ok {
			continue
		}
		for _, m := range []struct {
			mode      string
			one, many float64
		}{{"local-primary", 0.67, 5}, {"fleet", 0.67, 10}} {
			v, ok := f.get(fmt.Sprintf("BenchmarkAckedWrites/%s/callers=%d", m.mode, n), "ops/s")
			if !ok {
				continue
			}
			goal := m.one
			if n > 1 {
				goal = m.many
			}
			base := "raw SQLite " + num(raw) + "/s"
			if fl, ok := f.get("BenchmarkAckFloor/durable-new-file", "ops/s"); ok && n == 1 {
				base += "; a durable new file " + num(fl) + "/s"
			}
			rows = append(rows, row{fmt.Sprintf("acknowledged writes/s, %d caller(s), %s", n, m.mode), fmt.Sprintf("≥ %g× raw", goal), base, fmt.Sprintf("%s (%.2f×)", num(v), v/raw), yes(v/raw >= goal)})
		}
	}
	return rows
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchscale < bench-scale-output.txt")
		flag.PrintDefaults()
	}
	flag.Parse()
	f, loads, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
	if len(loads) > 0 {
		lo, hi := loads[0], loads[0]
		for _, l := range loads {
			lo, hi = min(lo, l), max(hi, l)
		}
		fmt.Printf("Load average (1 minute) during the run: %.2f–%.2f (%d samples).\n\n", lo, hi, len(loads))
	}
	fmt.Println("| what | goal | baseline, same run | measured | met |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range table(f) {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.what, r.goal, r.baseline, r.measured, r.met)
	}
}
