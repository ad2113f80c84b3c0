package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The conventions every command keeps (docs/cli.md, "Conventions"); the
// table test in cli_test.go checks each entry of commands() against them:
//
//   - --help, -h and "cellb help <cmd>" print the command's usage to stdout
//     and exit 0;
//   - a usage error (unknown flag, bad value, missing or extra argument)
//     prints one line and a hint to stderr and exits 2 (exitUsage);
//   - a runtime error prints one line to stderr and exits 1 (exitFailed);
//   - flags may come before, between or after the arguments; "--" ends
//     them; -x and --x are the same flag.
//
// A command builds a cmdLine, declares its flags on cl.fs, and calls
// cl.parse; after parsing, cl.usageErr reports a bad combination.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// cmdLine is one command's flags and usage text.
type cmdLine struct {
	name     string // "restore"
	synopsis string // the arguments after the flags, e.g. "<bucket-url> <Class:id> <out.db>"
	about    string // what the command does, paragraphs; ends without a newline
	// minArgs and maxArgs bound the positional arguments (maxArgs < 0: no
	// bound).
	minArgs, maxArgs int
	// argsWant says what the arguments are, for the error when their
	// count is wrong: "one bucket URL".
	argsWant string
	fs       *flag.FlagSet
	aliases  map[string]string // old spelling -> the flag it stands for
}

func newCmdLine(name, synopsis, about string, minArgs, maxArgs int, argsWant string) *cmdLine {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cmdLine{name: name, synopsis: synopsis, about: about, minArgs: minArgs, maxArgs: maxArgs, argsWant: argsWant, fs: fs}
}

// alias makes --old another spelling of the flag --name, accepted but not
// listed in the usage (kept so that older scripts keep working).
func (c *cmdLine) alias(old, name string) {
	if c.aliases == nil {
		c.aliases = map[string]string{}
	}
	c.aliases[old] = name
}

// usageError is a command line the command refuses: one line, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// errHelp is what parseArgs returns for -h, --help, -help.
var errHelp = errors.New("help requested")

// parse parses args. done reports that the command must return code at
// once: help was printed (0), or a usage error was (2).
func (c *cmdLine) parse(e *env, args []string) (pos []string, code int, done bool) {
	pos, err := c.parseArgs(args)
	if errors.Is(err, errHelp) {
		c.usage(e.stdout)
		return nil, exitOK, true
	}
	if err == nil {
		switch {
		case len(pos) < c.minArgs:
			err = usagef("missing arguments: want %s, got %d", c.argsWant, len(pos))
		case c.maxArgs >= 0 && len(pos) > c.maxArgs:
			err = usagef("unexpected argument %q: want %s", pos[c.maxArgs], c.argsWant)
		}
	}
	if err != nil {
		return nil, c.usageErr(e, "%v", err), true
	}
	return pos, exitOK, false
}

// usageErr prints a usage error (one line and the hint) and returns 2.
func (c *cmdLine) usageErr(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "cellb %s: %s\n", c.name, oneLineString(fmt.Sprintf(format, args...)))
	fmt.Fprintf(e.stderr, "run 'cellb help %s' for usage\n", c.name)
	return exitUsage
}

// fail prints a runtime error (one line) and returns 1.
func (c *cmdLine) fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "cellb %s: %v\n", c.name, oneLine(err))
	return exitFailed
}

// set reports whether the flag name was given on the command line.
func (c *cmdLine) set(name string) bool {
	found := false
	c.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// parseArgs accepts flags before, between and after the positional
// arguments, as people type them ("cellb restore URL KEY out.db --txid 5");
// a bare "--" makes everything after it positional. Its errors are
// *usageError in CellB's words, not the flag package's.
func (c *cmdLine) parseArgs(args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, val, hasVal := strings.Cut(name, "=")
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		if to, ok := c.aliases[name]; ok {
			name = to
		}
		f := c.fs.Lookup(name)
		if f == nil || name == "" {
			return nil, usagef("unknown flag %s", strings.SplitN(a, "=", 2)[0])
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, usagef("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		if err := c.fs.Set(name, val); err != nil {
			return nil, usagef("bad value %q for --%s: %s", val, name, wantOf(f, err))
		}
	}
	return pos, nil
}

// wantOf says what a flag takes, for the error about a value it refused.
func wantOf(f *flag.Flag, err error) string {
	kind, _ := flag.UnquoteUsage(f)
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "want true or false"
	}
	switch {
	case kind == "int":
		return "want a whole number"
	case kind == "uint":
		return "want a whole number, 0 or more"
	case kind == "float":
		return "want a number"
	case kind == "duration":
		return "want a duration such as 500ms, 30s or 5m"
	}
	return oneLineString(err.Error())
}

// usage prints the command's usage: the synopsis, what it does, and its
// flags as the FlagSet declares them.
func (c *cmdLine) usage(w io.Writer) {
	flags := ""
	c.fs.VisitAll(func(*flag.Flag) { flags = " [flags]" })
	fmt.Fprintf(w, "usage: cellb %s%s", c.name, flags)
	if c.synopsis != "" {
		fmt.Fprintf(w, " %s", c.synopsis)
	}
	fmt.Fprintln(w)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	if flags == "" {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	c.fs.VisitAll(func(f *flag.Flag) {
		kind, text := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if kind != "" {
			head += " " + strings.ToUpper(kind)
		}
		fmt.Fprintln(w, head)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "        %s\n", text)
	})
	fmt.Fprintln(w, "\n-h, --help prints this text. Flags may come before or after the arguments.")
}

// oneLineString keeps the first line of s.
func oneLineString(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
