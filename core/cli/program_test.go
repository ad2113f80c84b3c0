package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// testProgram has one command, "echo", that prints its arguments and
// answers --help through a Command.
func testProgram() *Program {
	return &Program{Name: "tool", Entries: []Entry{
		{Name: "version", Summary: "print the version", Run: func(_ context.Context, stdout, _ io.Writer, _ []string) int {
			io.WriteString(stdout, "tool 1\n")
			return ExitOK
		}},
		{Name: "echo", Summary: "print the arguments", Run: func(_ context.Context, stdout, stderr io.Writer, args []string) int {
			cl := New("tool", "echo", "<word>...", "Prints the words.", 1, -1, "words")
			pos, code, done := cl.Parse(stdout, stderr, args)
			if done {
				return code
			}
			io.WriteString(stdout, strings.Join(pos, " ")+"\n")
			return ExitOK
		}},
	}}
}

func runProgram(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := testProgram().Run(context.Background(), &stdout, &stderr, args)
	return code, stdout.String(), stderr.String()
}

func TestProgramDispatch(t *testing.T) {
	if code, out, errs := runProgram("echo", "a", "b"); code != 0 || out != "a b\n" || errs != "" {
		t.Errorf("echo a b: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, list, errs := runProgram()
	if code != ExitUsage || list == "" && errs == "" || !strings.HasPrefix(errs, "usage: tool <command>") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want the list on stderr, exit 2", code, list, errs)
	}
	code, help, _ := runProgram("help")
	if code != 0 || help != errs {
		t.Errorf("help: exit %d, stdout %q; want the list %q", code, help, errs)
	}
	// Sorted, with help added.
	if i, j, k := strings.Index(help, "\n  echo "), strings.Index(help, "\n  help "), strings.Index(help, "\n  version "); i < 0 || !(i < j && j < k) {
		t.Errorf("help does not list echo, help, version in order:\n%s", help)
	}
	for _, flag := range []string{"-h", "-help", "--help"} {
		if code, out, _ := runProgram(flag); code != 0 || out != help {
			t.Errorf("%s: exit %d, stdout %q; want help's", flag, code, out)
		}
	}
	if code, out, _ := runProgram("--version"); code != 0 || out != "tool 1\n" {
		t.Errorf("--version: exit %d, stdout %q", code, out)
	}
	_, echoHelp, _ := runProgram("echo", "--help")
	if code, out, _ := runProgram("help", "echo"); code != 0 || out != echoHelp || !strings.HasPrefix(out, "usage: tool echo") {
		t.Errorf("help echo: exit %d, stdout %q; want %q", code, out, echoHelp)
	}
	for args, want := range map[string]string{
		"nope":      "tool: unknown command \"nope\"\nrun 'tool help' for usage\n",
		"--nope":    "tool: unknown flag \"--nope\"\nrun 'tool help' for usage\n",
		"help nope": "tool help: unknown command \"nope\"\nrun 'tool help help' for usage\n",
		"help a b":  "tool help: unexpected argument \"b\": want at most one command name\nrun 'tool help help' for usage\n",
	} {
		if code, out, errs := runProgram(strings.Fields(args)...); code != ExitUsage || out != "" || errs != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, %q", args, code, out, errs, want)
		}
	}
	if _, ok := testProgram().Lookup("help"); !ok {
		t.Error("Lookup(help) found nothing")
	}
	if _, ok := testProgram().Lookup("nope"); ok {
		t.Error("Lookup(nope) found a command")
	}
}

// VersionEntry prints the build's versions as WriteVersion does, answers
// --help with its usage, and refuses arguments.
func TestVersionEntry(t *testing.T) {
	p := &Program{Name: "tool", Entries: []Entry{VersionEntry("tool", "github.com/cellb/cellb", "CellB")}}
	var out, errs bytes.Buffer
	if code := p.Run(context.Background(), &out, &errs, []string{"--version"}); code != 0 || !strings.HasPrefix(out.String(), "tool ") || !strings.Contains(out.String(), "\n  go ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	out.Reset()
	if code := p.Run(context.Background(), &out, &errs, []string{"version", "--help"}); code != 0 || !strings.HasPrefix(out.String(), "usage: tool version\n") || !strings.Contains(out.String(), "every CellB module") {
		t.Errorf("version --help: exit %d, stdout %q", code, out.String())
	}
	if _, ok := p.Lookup("version"); !ok || !strings.Contains(p.Commands()[1].Summary, "the CellB modules") {
		t.Errorf("commands: %+v", p.Commands())
	}
	if code := p.Run(context.Background(), &out, &errs, []string{"version", "x"}); code != ExitUsage {
		t.Errorf("version x: exit %d, want 2", code)
	}
}
