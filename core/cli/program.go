package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Entry is one command of a Program: Run gets the arguments after the
// command's name and returns the exit status.
type Entry struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, stdout, stderr io.Writer, args []string) int
}

// Program is a tool made of commands ("cellb serve", "cellb restore"): it
// dispatches on the first argument and adds the top-level conventions of
// the package doc, so that a tool keeps only its table of commands:
//
//   - no arguments prints the list of commands to stderr and exits 2;
//   - -h, -help and --help are the help command, -version and --version
//     the command named "version";
//   - "help" lists the commands on stdout, "help <cmd>" runs <cmd> --help;
//   - an unknown command or flag is one line and a hint on stderr, exit 2.
type Program struct {
	// Name is the tool's name in messages and usage: "cellb".
	Name string
	// Entries are the tool's commands, in any order, without "help"
	// (Program adds it).
	Entries []Entry
}

// Commands returns the entries and the help command, sorted by name.
func (p *Program) Commands() []Entry {
	cmds := append(slices.Clone(p.Entries), p.helpEntry())
	slices.SortFunc(cmds, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return cmds
}

// Lookup returns the command called name, the help command included.
func (p *Program) Lookup(name string) (Entry, bool) {
	for _, c := range p.Commands() {
		if c.Name == name {
			return c, true
		}
	}
	return Entry{}, false
}

// Run runs the command args[0] names with the rest of args, and returns
// its exit status.
func (p *Program) Run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		p.Usage(stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	if c, ok := p.Lookup(name); ok {
		return c.Run(ctx, stdout, stderr, args[1:])
	}
	what := "command"
	if strings.HasPrefix(name, "-") {
		what = "flag"
	}
	fmt.Fprintf(stderr, "%s: unknown %s %q\nrun '%s help' for usage\n", p.Name, what, name, p.Name)
	return ExitUsage
}

// Usage prints the list of commands with their summaries.
func (p *Program) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags] [arguments]\n\n", p.Name)
	fmt.Fprintln(w, "commands:")
	for _, c := range p.Commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s help <command>' (or %s <command> --help) for a command's usage.\n", p.Name, p.Name)
}

// helpEntry is the help command: the list of commands, or one command's
// usage.
func (p *Program) helpEntry() Entry {
	return Entry{
		Name:    "help",
		Summary: "print the usage of " + p.Name + " or of one command",
		Run: func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
			cl := New(p.Name, "help", "[<command>]", "Prints the list of commands, or the usage of one command (as "+p.Name+" <command> --help).", 0, 1, "at most one command name")
			pos, code, done := cl.Parse(stdout, stderr, args)
			if done {
				return code
			}
			if len(pos) == 0 {
				p.Usage(stdout)
				return ExitOK
			}
			c, ok := p.Lookup(pos[0])
			if !ok {
				return cl.UsageErr(stderr, "unknown command %q", pos[0])
			}
			return c.Run(ctx, stdout, stderr, []string{"--help"})
		},
	}
}
