package main

import (
	"context"
	"flag"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/store"
)

func repairCommand() command {
	return command{name: "repair", summary: "diagnose a cell and write the released record it needs (--apply)", run: func(ctx context.Context, e *env, args []string) int {
		fs := flag.NewFlagSet("repair", flag.ContinueOnError)
		resolve := admin.NameFlags(fs, defaultScriptName)
		apply := fs.Bool("apply", false, "write the repair (default: only print it)")
		pos, key, code, ok := cmdArgs(e, fs, "usage: cellb repair <bucket-url> <Class:id> [--name [--script-name S]] [--apply]", args, 2, 2, resolve)
		if !ok {
			return code
		}
		return onBucket(ctx, e, "repair", pos[0], func(s store.Store) error {
			return admin.Repair(ctx, s, key, *apply, admin.Options{}, e.stdout)
		})
	}}
}
