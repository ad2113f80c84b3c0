package main

import (
	"context"
	"flag"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
)

func inspectCommand() command {
	return command{name: "inspect", summary: "show a bucket's nodes, cells and wake index, or one cell (read-only)", run: func(ctx context.Context, e *env, args []string) int {
		fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
		resolve := admin.NameFlags(fs, defaultScriptName)
		asJSON := fs.Bool("json", false, "print JSON (fields in docs/cli.md)")
		opts := admin.Options{}
		fs.IntVar(&opts.Concurrency, "concurrency", admin.DefaultConcurrency, "cells read at once (0: the default)")
		quiet := fs.Bool("quiet", false, "no progress output")
		pos, key, code, ok := cmdArgs(e, fs, `usage: cellb inspect <bucket-url> [<Class:id> | <Class:name> --name [--script-name S]]
                    [--json] [--concurrency N] [--quiet]`, args, 1, 2, resolve)
		if !ok {
			return code
		}
		if !*quiet {
			opts.Progress = progress.NewCounter(e.stderr, "inspect", "cells").Update
		}
		return onBucket(ctx, e, "inspect", pos[0], func(s store.Store) error {
			return admin.Show(ctx, s, key, *asJSON, opts, e.stdout)
		})
	}}
}
