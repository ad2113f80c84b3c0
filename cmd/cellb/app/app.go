// Package app is the cellb command (docs/cli.md), importable so that a
// store author's main of a few lines gets diagnose, inspect, restore,
// repair and serve on their own bucket URL scheme (Options.Buckets;
// docs/adapters.md) without forking cmd/cellb. Every command keeps the
// conventions of core/cli, which also dispatches on the command name.
package app

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/cellb/cellb/core/cli"
	"github.com/cellb/cellb/core/store"
)

// Options are what a main adds to cellb.
type Options struct {
	// Buckets register more bucket URL schemes, next to the ones cellb
	// ships (file, s3, gs, az, azblob): each is an adapter's Register.
	// A scheme registered twice panics, as store.URLMux.Register does.
	Buckets []func(*store.URLMux)
}

// Main runs cellb on os.Args with o's buckets and returns the exit
// status; SIGINT and SIGTERM cancel the command's context (serve then
// shuts down in order).
func Main(o Options) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, mux: bucketMux(o.Buckets...)}, os.Args[1:])
}

// env is what a command may touch besides its arguments, so tests can run
// commands in-process.
type env struct {
	stdout io.Writer
	stderr io.Writer
	// mux opens bucket URLs (nil: the adapters cellb ships).
	mux *store.URLMux
}

// buckets is the mux the command opens bucket URLs with.
func (e *env) buckets() *store.URLMux { return orDefault(e.mux) }

// appCommand is a command that takes an env; entry makes it a cli.Entry.
type appCommand struct {
	name, summary string
	run           func(ctx context.Context, e *env, args []string) int
}

func command(name, summary string, run func(ctx context.Context, e *env, args []string) int) appCommand {
	return appCommand{name, summary, run}
}

func (c appCommand) entry(mux *store.URLMux) cli.Entry {
	return cli.Entry{Name: c.name, Summary: c.summary, Run: func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		return c.run(ctx, &env{stdout: stdout, stderr: stderr, mux: mux}, args)
	}}
}

// program is cellb's table of commands, opening buckets with mux; core/cli
// adds help.
func program(mux *store.URLMux) *cli.Program {
	p := &cli.Program{Name: "cellb", Entries: []cli.Entry{versionCommand()}}
	// Each subcommand's file adds its entry here.
	for _, c := range []appCommand{diagnoseCommand(), idCommand(), importCommand(), inspectCommand(), repairCommand(), restoreCommand(), serveCommand()} {
		p.Entries = append(p.Entries, c.entry(mux))
	}
	return p
}

func run(ctx context.Context, e *env, args []string) int {
	return program(e.buckets()).Run(ctx, e.stdout, e.stderr, args)
}
