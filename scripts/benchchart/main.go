// Command benchchart draws acknowledged writes per second against callers,
// one line per mode, from the output of BenchmarkAckedWrites
// (tests/bench_runtime_test.go), as an SVG written with the standard
// library alone. scripts/bench-chart.sh runs it; by hand:
//
//	go test -run '^$' -bench AckedWrites -benchtime 2s ./tests > bench.txt
//	(cd scripts/benchchart && GOWORK=off go run main.go -title "…" < bench.txt > out.svg)
//
// A line of the input looks like
//
//	BenchmarkAckedWrites/local-primary/callers=16-2   6097   276753 ns/op   …   3613 ops/s
//
// With several runs of one case (-count), the median is drawn.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// series is one mode: its name in the benchmark, its label and colour.
type series struct{ key, label, color string }

var modes = []series{
	{"raw-sqlite-full", "raw SQLite, synchronous=FULL (baseline)", "#555555"},
	{"local", "local (durability.Local, SQLite syncs each commit)", "#1f77b4"},
	{"local-primary", "local-primary (LTX log, local-files bucket)", "#2ca02c"},
	{"fleet", "fleet / bucket wins (LTX log, local-files bucket)", "#d62728"},
}

var line = regexp.MustCompile(`^BenchmarkAckedWrites/([a-z-]+)/callers=(\d+)(?:-\d+)?\s.*?\s([0-9.e+]+) ops/s`)

// parse returns mode → callers → every ops/s figure read.
func parse(r io.Reader) (map[string]map[int][]float64, error) {
	out := map[string]map[int][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", sc.Text(), err)
		}
		if out[m[1]] == nil {
			out[m[1]] = map[int][]float64{}
		}
		out[m[1]][n] = append(out[m[1]][n], v)
	}
	return out, sc.Err()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	title := flag.String("title", "Acknowledged writes per second, one cell", "chart title")
	note := flag.String("note", "", "a line under the title (machine, load, date)")
	flag.Parse()
	data, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
	if len(data) == 0 {
		fmt.Fprintln(os.Stderr, "benchchart: no BenchmarkAckedWrites ops/s lines in the input")
		os.Exit(1)
	}
	if err := draw(os.Stdout, data, *title, *note); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func draw(w io.Writer, data map[string]map[int][]float64, title, note string) error {
	const (
		width, height          = 760, 470
		left, right, top, bott = 80, 20, 70, 150
	)
	var callers []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, byN := range data {
		for n, vs := range byN {
			if !slices.Contains(callers, n) {
				callers = append(callers, n)
			}
			v := median(vs)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	slices.Sort(callers)
	// A log scale on both axes, from a power of ten below the least
	// figure to one above the greatest.
	ylo, yhi := math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	pw, ph := float64(width-left-right), float64(height-top-bott)
	x := func(n int) float64 {
		if len(callers) == 1 {
			return float64(left) + pw/2
		}
		f := math.Log(float64(n)/float64(callers[0])) / math.Log(float64(callers[len(callers)-1])/float64(callers[0]))
		return float64(left) + f*pw
	}
	y := func(v float64) float64 {
		return float64(top) + ph*(1-math.Log10(v/ylo)/math.Log10(yhi/ylo))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	if note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="44" fill="#444">%s</text>`+"\n", left, html.EscapeString(note))
	}
	// Grid and axes.
	for d := ylo; d <= yhi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v > yhi*1.0001 {
				break
			}
			yy := y(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, yy, width-right, yy, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, yy, thousands(v))
		}
	}
	for _, n := range callers {
		xx := x(n)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>`+"\n", xx, top, xx, height-bott)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", xx, height-bott+16, n)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">concurrent callers (log scale)</text>`+"\n", float64(left)+pw/2, height-bott+34)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">acknowledged writes/s (log scale)</text>`+"\n", float64(top)+ph/2)
	// One line per mode, in the legend's order.
	legend := 0
	for _, s := range modes {
		byN := data[s.key]
		if byN == nil {
			continue
		}
		var pts []string
		for _, n := range callers {
			if vs := byN[n]; len(vs) > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(n), y(median(vs))))
			}
		}
		dash := ""
		if s.key == "raw-sqlite-full" {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2.5"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		for _, n := range callers {
			if vs := byN[n]; len(vs) > 0 {
				v := median(vs)
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, %d callers: %s/s</title></circle>`+"\n", x(n), y(v), s.color, html.EscapeString(s.key), n, thousands(v))
			}
		}
		ly := height - bott + 56 + legend*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`+"\n", left, ly, left+28, ly, s.color, dash)
		var figs []string
		for _, n := range callers {
			if vs := byN[n]; len(vs) > 0 {
				figs = append(figs, fmt.Sprintf("%d: %s", n, thousands(median(vs))))
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s — %s</text>`+"\n", left+36, ly, html.EscapeString(s.label), strings.Join(figs, ", "))
		legend++
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// thousands formats v rounded, with commas between thousands.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
