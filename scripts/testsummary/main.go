// Command testsummary reads `go test -json` on stdin and prints what a
// plain `go test` would (each package's ok/FAIL line, the output of the
// tests that failed, build errors), then how many tests were skipped,
// each named with the first line of its reason. It exits 1 when a test, a
// package or a build failed. .ci/run pipes the README's test command
// through it (docs/testing.md, "Skipped tests in CI"). With -require
// REGEXP, a test that skips with a reason matching REGEXP fails the run
// too (.ci/run: the emulators' variables, which it sets). Standard
// library only: `GOWORK=off go run main.go`.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// skipped is one skipped test: where, and the first line it logged.
type skipped struct {
	pkg, test, reason string
}

// summary follows one run.
type summary struct {
	out      io.Writer
	buffered map[string][]string // a test's output, kept until it ends
	skips    []skipped
	passed   int
	failed   bool
	// require matches the skip reasons that fail the run (nil: none).
	require *regexp.Regexp
}

func key(e event) string { return e.Package + "\x00" + e.Test }

// line handles one input line; anything that is not an event is printed
// as it came (the go command's own messages).
func (s *summary) line(raw string) {
	var e event
	if !strings.HasPrefix(raw, "{") || json.Unmarshal([]byte(raw), &e) != nil {
		fmt.Fprintln(s.out, raw)
		return
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Action == "build-fail":
		s.failed = true
	case e.Test == "":
		s.pkg(e)
	case e.Action == "output":
		if !strings.HasPrefix(e.Output, "=== ") {
			s.buffered[key(e)] = append(s.buffered[key(e)], e.Output)
		}
	case e.Action == "pass":
		s.passed++
		delete(s.buffered, key(e))
	case e.Action == "fail":
		s.failed = true
		for _, l := range s.buffered[key(e)] {
			fmt.Fprint(s.out, l)
		}
		delete(s.buffered, key(e))
	case e.Action == "skip":
		s.skips = append(s.skips, skipped{e.Package, e.Test, reason(s.buffered[key(e)])})
		delete(s.buffered, key(e))
	}
}

// pkg handles a package's own events: of a package that passed, only its
// "ok" (or "?  … [no test files]") line is printed, as a plain go test
// does; of one that failed, everything it printed outside its tests (a
// panic, a timeout, the FAIL lines).
func (s *summary) pkg(e event) {
	k := key(e)
	switch e.Action {
	case "output":
		s.buffered[k] = append(s.buffered[k], e.Output)
	case "pass", "skip":
		for _, l := range s.buffered[k] {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "? ") {
				fmt.Fprint(s.out, l)
			}
		}
		delete(s.buffered, k)
	case "fail":
		s.failed = true
		for _, l := range s.buffered[k] {
			fmt.Fprint(s.out, l)
		}
		delete(s.buffered, k)
	}
}

// reason is the first line a skipped test logged (its t.Skip message:
// test2json puts it before the "--- SKIP" line), without its file:line
// prefix, at most 100 characters.
func reason(lines []string) string {
	for _, l := range lines {
		r := strings.TrimSpace(l)
		if r == "" || strings.HasPrefix(r, "--- ") {
			continue
		}
		if at, after, ok := strings.Cut(r, ": "); ok && strings.Contains(at, ".go:") {
			r = after
		}
		if len(r) > 100 {
			r = r[:97] + "..."
		}
		return r
	}
	return ""
}

// report prints the skipped tests, sorted, and the counts.
func (s *summary) report() {
	sort.Slice(s.skips, func(i, j int) bool {
		if s.skips[i].pkg != s.skips[j].pkg {
			return s.skips[i].pkg < s.skips[j].pkg
		}
		return s.skips[i].test < s.skips[j].test
	})
	fmt.Fprintf(s.out, "== skipped: %d tests\n", len(s.skips))
	for _, k := range s.skips {
		fmt.Fprintf(s.out, "   %s %s: %s\n", strings.TrimPrefix(k.pkg, "github.com/cellb/cellb/"), k.test, k.reason)
	}
	fmt.Fprintf(s.out, "== tests: %d passed, %d skipped\n", s.passed, len(s.skips))
	if s.require == nil {
		return
	}
	for _, k := range s.skips {
		if s.require.MatchString(k.reason) {
			fmt.Fprintf(s.out, "FAIL: %s %s skipped, but what it needs is required here (%s)\n", k.pkg, k.test, s.require)
			s.failed = true
		}
	}
}

func run(in io.Reader, out io.Writer, require *regexp.Regexp) int {
	s := &summary{out: out, buffered: map[string][]string{}, require: require}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		s.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary:", err)
		return 1
	}
	s.report()
	if s.failed {
		return 1
	}
	return 0
}

func main() {
	require := flag.String("require", "", "fail when a test skips with a reason matching this `regexp`")
	flag.Parse()
	var re *regexp.Regexp
	if *require != "" {
		re = regexp.MustCompile(*require)
	}
	os.Exit(run(os.Stdin, os.Stdout, re))
}
