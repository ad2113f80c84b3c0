// Command cellb runs and inspects CellB nodes and buckets.
//
//	cellb serve     run a node hosting the example app
//	cellb diagnose  check that a bucket keeps the promises CellB relies on
//	cellb restore   rebuild a cell's database from a bucket
//	cellb version   print the versions of the modules in this binary
//	cellb help      print a command's usage
//
// Every command keeps the conventions in flags.go (docs/cli.md): usage on
// --help to stdout, usage errors in one line with exit status 2, runtime
// errors with exit status 1, flags before or after the arguments.
package main

import (
	"context"
	"fmt"
	"github.com/cellb/cellb/core/cli"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what a command may touch besides its arguments, so tests can run
// commands in-process.
type env struct {
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		// Each subcommand's file adds its entry here.
		diagnoseCommand(),
		helpCommand(),
		idCommand(),
		inspectCommand(),
		repairCommand(),
		restoreCommand(),
		serveCommand(),
		versionCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(ctx context.Context, e *env, args []string) int {
	cmds := sortedCommands()
	if len(args) == 0 {
		usage(e.stderr, cmds)
		return cli.ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	if c, ok := lookup(cmds, name); ok {
		return c.run(ctx, e, args[1:])
	}
	what := "command"
	if strings.HasPrefix(name, "-") {
		what = "flag"
	}
	fmt.Fprintf(e.stderr, "cellb: unknown %s %q\nrun 'cellb help' for usage\n", what, name)
	return cli.ExitUsage
}

func sortedCommands() []command {
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds
}

func lookup(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: cellb <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'cellb help <command>' (or cellb <command> --help) for a command's usage.")
}

func helpCommand() command {
	return command{
		name:    "help",
		summary: "print the usage of cellb or of one command",
		run: func(ctx context.Context, e *env, args []string) int {
			cl := newCmdLine("help", "[<command>]", "Prints the list of commands, or the usage of one command (as cellb <command> --help).", 0, 1, "at most one command name")
			pos, code, done := cl.Parse(e.stdout, e.stderr, args)
			if done {
				return code
			}
			cmds := sortedCommands()
			if len(pos) == 0 {
				usage(e.stdout, cmds)
				return cli.ExitOK
			}
			c, ok := lookup(cmds, pos[0])
			if !ok {
				return cl.UsageErr(e.stderr, "unknown command %q", pos[0])
			}
			return c.run(ctx, e, []string{"--help"})
		},
	}
}
