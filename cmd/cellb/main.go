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
// errors with exit status 1, flags before or after the arguments. The
// dispatch on the command name is core/cli's Program.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/cellb/cellb/core/cli"
)

// env is what a command may touch besides its arguments, so tests can run
// commands in-process.
type env struct {
	stdout io.Writer
	stderr io.Writer
}

// command makes a cli.Entry of a command that takes an env.
func command(name, summary string, run func(ctx context.Context, e *env, args []string) int) cli.Entry {
	return cli.Entry{Name: name, Summary: summary, Run: func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		return run(ctx, &env{stdout: stdout, stderr: stderr}, args)
	}}
}

// program is cellb's table of commands; core/cli adds help.
func program() *cli.Program {
	return &cli.Program{Name: "cellb", Entries: []cli.Entry{
		// Each subcommand's file adds its entry here.
		diagnoseCommand(),
		idCommand(),
		inspectCommand(),
		repairCommand(),
		restoreCommand(),
		serveCommand(),
		versionCommand(),
	}}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(ctx context.Context, e *env, args []string) int {
	return program().Run(ctx, e.stdout, e.stderr, args)
}
