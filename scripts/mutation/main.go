// Command mutation applies the mutants a gremlins dry run lists for the
// chosen files of one package, one at a time, through `go test -overlay`
// (the sources are never edited), and runs the given test commands on
// each: a mutant that makes any of them fail is killed, one that passes
// them all lived. Mutants on lines no test reaches (per a coverage
// profile of the same test commands) lived without a run. Mutants listed
// as equivalent are left out of the score.
//
// It is run by scripts/mutation.sh; see docs/testing.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

type mutant struct {
	File   string // base name
	Line   int
	Column int
	Type   string
	Status string // KILLED, LIVED, NOT COVERED, EQUIVALENT, NOT VIABLE
	Note   string
}

func (m mutant) id() string { return fmt.Sprintf("%s:%d:%d %s", m.File, m.Line, m.Column, m.Type) }

type testCmd struct {
	dir  string
	args []string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, "; ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var (
		gremlins   = flag.String("mutants", "", "gremlins dry-run JSON output (-o)")
		pkgDir     = flag.String("pkg", "", "directory of the mutated package (absolute)")
		files      = flag.String("files", "", "comma-separated base names of the files to mutate")
		cover      = flag.String("cover", "", "coverage profile of the test commands (optional)")
		equivalent = flag.String("equivalent", "", "file listing equivalent mutants: \"<file>:<line>:<col> <TYPE>  reason\"")
		only       = flag.String("only", "", "run just these mutants (\"<file>:<line>:<col> <TYPE>\", comma-separated)")
		timeout    = flag.Duration("timeout", 3*time.Minute, "limit per test command per mutant")
		tests      listFlag
	)
	flag.Var(&tests, "test", "a test command: \"<dir>|go test args...\" (repeatable, run in order)")
	flag.Parse()
	if *gremlins == "" || *pkgDir == "" || *files == "" || len(tests) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var cmds []testCmd
	for _, t := range tests {
		dir, args, ok := strings.Cut(t, "|")
		if !ok {
			fatal("bad -test %q", t)
		}
		cmds = append(cmds, testCmd{dir, strings.Fields(args)})
	}
	want := map[string]bool{}
	for _, f := range strings.Split(*files, ",") {
		want[f] = true
	}
	muts := readMutants(*gremlins, want)
	equiv := readEquivalent(*equivalent)
	covered := readCover(*cover, *pkgDir)

	tmp, err := os.MkdirTemp("", "mutation-")
	if err != nil {
		fatal("%v", err)
	}
	defer os.RemoveAll(tmp)
	for i := range muts {
		m := &muts[i]
		if *only != "" && !slices.Contains(strings.Split(*only, ","), m.id()) {
			continue
		}
		if why, ok := equiv[m.id()]; ok {
			m.Status, m.Note = "EQUIVALENT", why
			report(m)
			continue
		}
		if covered != nil && !covered(m.File, m.Line, m.Column) {
			m.Status = "NOT COVERED"
			report(m)
			continue
		}
		src := filepath.Join(*pkgDir, m.File)
		out, err := mutate(src, m.Line, m.Column, m.Type)
		if err != nil {
			m.Status, m.Note = "NOT VIABLE", err.Error()
			report(m)
			continue
		}
		mf := filepath.Join(tmp, fmt.Sprintf("m%d.go", i))
		ov := filepath.Join(tmp, fmt.Sprintf("m%d.json", i))
		os.WriteFile(mf, out, 0o644)
		b, _ := json.Marshal(map[string]map[string]string{"Replace": {src: mf}})
		os.WriteFile(ov, b, 0o644)
		m.Status = "LIVED"
		for _, c := range cmds {
			res := run(c, ov, *timeout)
			if res == notViable {
				m.Status = "NOT VIABLE"
				m.Note = "does not compile"
				break
			}
			if res != "" {
				m.Status, m.Note = "KILLED", res
				break
			}
		}
		report(m)
	}
	summary(muts)
}

func report(m *mutant) {
	note := m.Note
	if len(note) > 100 {
		note = note[:100]
	}
	fmt.Printf("%-12s %s  %s\n", m.Status, m.id(), note)
}

func summary(muts []mutant) {
	type score struct{ killed, lived, notCovered, equiv, notViable int }
	per := map[string]*score{}
	var names []string
	for _, m := range muts {
		s := per[m.File]
		if s == nil {
			s = &score{}
			per[m.File] = s
			names = append(names, m.File)
		}
		switch m.Status {
		case "KILLED":
			s.killed++
		case "LIVED":
			s.lived++
		case "NOT COVERED":
			s.notCovered++
		case "EQUIVALENT":
			s.equiv++
		case "NOT VIABLE":
			s.notViable++
		}
	}
	sort.Strings(names)
	fmt.Println()
	fmt.Println("file            killed  lived  not-covered  equivalent  not-viable  score")
	for _, n := range names {
		s := per[n]
		total := s.killed + s.lived + s.notCovered
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(s.killed) / float64(total)
		}
		fmt.Printf("%-15s %6d %6d %12d %11d %11d  %5.1f%%\n", n, s.killed, s.lived, s.notCovered, s.equiv, s.notViable, pct)
	}
	fmt.Println("score = killed / (killed + lived + not covered); equivalent and not-viable mutants are left out")
}

// notViable is what run reports for a mutant that does not compile.
const notViable = "\x00not viable"

// run runs one test command with the overlay; it returns "" when the
// tests pass, else why they did not.
func run(c testCmd, overlay string, limit time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append([]string{"test", "-overlay", overlay}, c.args...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = c.dir
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	if ctx.Err() != nil {
		return "timed out in " + c.dir
	}
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		return notViable
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
			return strings.TrimSpace(l)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return "failed: " + lines[len(lines)-1]
}

func readMutants(path string, want map[string]bool) []mutant {
	b, err := os.ReadFile(path)
	if err != nil {
		fatal("%v", err)
	}
	var doc struct {
		Files []struct {
			FileName  string `json:"file_name"`
			Mutations []struct {
				Type   string `json:"type"`
				Line   int    `json:"line"`
				Column int    `json:"column"`
			} `json:"mutations"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		fatal("%s: %v", path, err)
	}
	var out []mutant
	for _, f := range doc.Files {
		name := filepath.Base(f.FileName)
		if !want[name] {
			continue
		}
		for _, m := range f.Mutations {
			out = append(out, mutant{File: name, Line: m.Line, Column: m.Column, Type: m.Type})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Type < b.Type
	})
	return out
}

func readEquivalent(path string) map[string]string {
	out := map[string]string{}
	if path == "" {
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		fatal("%v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			fatal("%s: bad line %q", path, l)
		}
		id := f[0] + " " + f[1]
		out[id] = strings.Join(f[2:], " ")
	}
	return out
}

// readCover returns whether a position of a file of pkgDir lies in a
// block the profile saw run (nil: no profile, everything counts as
// covered).
func readCover(path, pkgDir string) func(file string, line, col int) bool {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fatal("%v", err)
	}
	type block struct{ l0, c0, l1, c1 int }
	hit := map[string][]block{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "mode:") {
			continue
		}
		// import/path/file.go:l0.c0,l1.c1 nstmt count
		colon := strings.LastIndex(l, ":")
		name := filepath.Base(l[:colon])
		f := strings.Fields(l[colon+1:])
		if len(f) != 3 || f[2] == "0" {
			continue
		}
		var bl block
		if _, err := fmt.Sscanf(f[0], "%d.%d,%d.%d", &bl.l0, &bl.c0, &bl.l1, &bl.c1); err != nil {
			fatal("cover line %q: %v", l, err)
		}
		hit[name] = append(hit[name], bl)
	}
	before := func(l0, c0, l1, c1 int) bool { return l0 < l1 || l0 == l1 && c0 <= c1 }
	return func(file string, line, col int) bool {
		for _, bl := range hit[file] {
			if before(bl.l0, bl.c0, line, col) && before(line, col, bl.l1, bl.c1) {
				return true
			}
		}
		return false
	}
}

// replacements maps a mutant type and the operator found at its position
// to what gremlins puts there.
var replacements = map[string]map[string]string{
	"ARITHMETIC_BASE":       {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"CONDITIONALS_BOUNDARY": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
	"CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"},
	"INCREMENT_DECREMENT":   {"++": "--", "--": "++"},
	"INVERT_NEGATIVES":      {"-": "+"},
	"INVERT_LOGICAL":        {"&&": "||", "||": "&&"},
	"INVERT_LOOPCTRL":       {"break": "continue", "continue": "break"},
	"INVERT_ASSIGNMENTS":    {"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "*="},
}

var operators = []string{"continue", "break", "<=", ">=", "==", "!=", "++", "--", "&&", "||", "+=", "-=", "*=", "/=", "%=", "<", ">", "+", "-", "*", "/", "%"}

func mutate(path string, line, col int, typ string) ([]byte, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return nil, fmt.Errorf("no line %d", line)
		}
		off += i + 1
	}
	off += col - 1
	if off >= len(src) {
		return nil, fmt.Errorf("no column %d on line %d", col, line)
	}
	rep := replacements[typ]
	if rep == nil {
		return nil, fmt.Errorf("mutant type %s not supported", typ)
	}
	for _, op := range operators {
		if bytes.HasPrefix(src[off:], []byte(op)) {
			to, ok := rep[op]
			if !ok {
				return nil, fmt.Errorf("%s does not apply to %q", typ, op)
			}
			out := append([]byte(nil), src[:off]...)
			out = append(out, to...)
			return append(out, src[off+len(op):]...), nil
		}
	}
	return nil, fmt.Errorf("no operator at %d:%d (%q)", line, col, strconv.Quote(string(src[off:min(off+8, len(src))])))
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mutation: "+format+"\n", args...)
	os.Exit(2)
}
