// Command cellb runs and inspects CellB nodes and buckets.
//
//	cellb serve     run a node hosting the example app
//	cellb diagnose  check that a bucket keeps the promises CellB relies on
//	cellb restore   rebuild a cell's database from a bucket
//
// Every command takes its flags before or after its arguments.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
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
		idCommand(),
		inspectCommand(),
		repairCommand(),
		restoreCommand(),
		serveCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(ctx context.Context, e *env, args []string) int {
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "cellb: unknown command %q (run 'cellb help')\n", args[0])
	return 2
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: cellb <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}
