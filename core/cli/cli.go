// Package cli is the command-line conventions of CellB's tools (cellb and
// any program built on CellB that wants the same behaviour), so that every
// command parses, answers --help and reports errors alike:
//
//   - --help, -h (and a "help <cmd>" that runs <cmd> --help) print the
//     command's usage to stdout and exit 0;
//   - a usage error (unknown flag, bad value, missing or extra argument)
//     prints one line and a hint to run "<prog> help <cmd>" to stderr and
//     exits 2 (ExitUsage);
//   - a runtime error prints one line to stderr and exits 1 (ExitFailed);
//   - flags may come before, between or after the arguments; "--" ends
//     them; -x and --x are the same flag.
//
// A command makes a Command, declares its flags on Command.Flags (a
// standard flag.FlagSet) and calls Parse.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses every command shares. A command may add its own above 2
// (cellb diagnose's 3: incomplete; cellb serve's 3: self-fenced).
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Command is one command's flags and usage text.
type Command struct {
	// Prog and Name name the command in messages: "cellb", "restore".
	Prog, Name string
	// Synopsis is the arguments after the flags, e.g. "<bucket-url>
	// <Class:id> <out.db>".
	Synopsis string
	// About says what the command does, in paragraphs, without a final
	// newline.
	About string
	// MinArgs and MaxArgs bound the positional arguments (MaxArgs < 0: no
	// bound); ArgsWant says what they are, for the error when their count
	// is wrong ("one bucket URL").
	MinArgs, MaxArgs int
	ArgsWant         string
	// Flags holds the command's flags; declare them before Parse.
	Flags   *flag.FlagSet
	aliases map[string]string // old spelling -> the flag it stands for
}

// New returns a Command with an empty flag set that prints nothing itself.
func New(prog, name, synopsis, about string, minArgs, maxArgs int, argsWant string) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Prog: prog, Name: name, Synopsis: synopsis, About: about, MinArgs: minArgs, MaxArgs: maxArgs, ArgsWant: argsWant, Flags: fs}
}

// alias makes --old another spelling of the flag --name, accepted but not
// listed in the usage (kept so that older scripts keep working).
func (c *Command) Alias(old, name string) {
	if c.aliases == nil {
		c.aliases = map[string]string{}
	}
	c.aliases[old] = name
}

// UsageError is a command line the command refuses: one line, exit 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a *UsageError from a format.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// ErrHelp is what ParseArgs returns for -h, --help, -help.
var ErrHelp = errors.New("help requested")

// Parse parses args. done reports that the command must return code at
// once: the usage was printed to stdout (0), or a usage error to stderr
// (2).
func (c *Command) Parse(stdout, stderr io.Writer, args []string) (pos []string, code int, done bool) {
	pos, err := c.ParseArgs(args)
	if errors.Is(err, ErrHelp) {
		c.Usage(stdout)
		return nil, ExitOK, true
	}
	if err == nil {
		switch {
		case len(pos) < c.MinArgs:
			err = Usagef("missing arguments: want %s, got %d", c.ArgsWant, len(pos))
		case c.MaxArgs >= 0 && len(pos) > c.MaxArgs:
			err = Usagef("unexpected argument %q: want %s", pos[c.MaxArgs], c.ArgsWant)
		}
	}
	if err != nil {
		return nil, c.UsageErr(stderr, "%v", err), true
	}
	return pos, ExitOK, false
}

// UsageErr prints a usage error to w, one line and the hint, and returns
// ExitUsage.
func (c *Command) UsageErr(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "%s %s: %s\n", c.Prog, c.Name, FirstLine(fmt.Sprintf(format, args...)))
	fmt.Fprintf(w, "run '%s help %s' for usage\n", c.Prog, c.Name)
	return ExitUsage
}

// Fail prints a runtime error to w, its first line only, and returns
// ExitFailed.
func (c *Command) Fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "%s %s: %s\n", c.Prog, c.Name, FirstLine(err.Error()))
	return ExitFailed
}

// Set reports whether the flag name was given on the command line.
func (c *Command) Set(name string) bool {
	found := false
	c.Flags.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// ParseArgs accepts flags before, between and after the positional
// arguments, as people type them ("cellb restore URL KEY out.db --txid 5");
// a bare "--" makes everything after it positional. Its errors are
// *UsageError in plain words, not the flag package's, or ErrHelp.
func (c *Command) ParseArgs(args []string) ([]string, error) {
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
			return nil, ErrHelp
		}
		if to, ok := c.aliases[name]; ok {
			name = to
		}
		f := c.Flags.Lookup(name)
		if f == nil || name == "" {
			return nil, Usagef("unknown flag %s", strings.SplitN(a, "=", 2)[0])
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, Usagef("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		if err := c.Flags.Set(name, val); err != nil {
			return nil, Usagef("bad value %q for --%s: %s", val, name, wantOf(f, err))
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
	return FirstLine(err.Error())
}

// Usage prints the command's usage: the synopsis, what it does, and its
// flags as Flags declares them (a `word` in a flag's usage names its
// value, as in the flag package).
func (c *Command) Usage(w io.Writer) {
	flags := ""
	c.Flags.VisitAll(func(*flag.Flag) { flags = " [flags]" })
	fmt.Fprintf(w, "usage: %s %s%s", c.Prog, c.Name, flags)
	if c.Synopsis != "" {
		fmt.Fprintf(w, " %s", c.Synopsis)
	}
	fmt.Fprintln(w)
	if c.About != "" {
		fmt.Fprintf(w, "\n%s\n", c.About)
	}
	if flags == "" {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	c.Flags.VisitAll(func(f *flag.Flag) {
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

// FirstLine keeps the first line of s, for messages on a terminal.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
