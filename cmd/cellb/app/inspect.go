package app

import (
	"context"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
)

func inspectCommand() appCommand {
	return command("inspect", "show a bucket's nodes, cells and wake index, or one cell (read-only)", func(ctx context.Context, e *env, args []string) int {
		cl := newCmdLine("inspect", "<bucket-url> [<Class:id>]", "Shows the bucket's nodes (live or expired), cells (owner, epoch, newest TXID,\nlog size, durability mode, alarm due, what is wrong) and wake index, or one\ncell in detail. It only reads the bucket. Fields of --json: docs/cli.md.", 1, 2, "<bucket-url> and at most one cell")
		asJSON := cl.Flags.Bool("json", false, "print JSON (fields in docs/cli.md)")
		opts := admin.Options{}
		cl.Flags.IntVar(&opts.Concurrency, "concurrency", admin.DefaultConcurrency, "cells read at once (0: the default)")
		quiet := cl.Flags.Bool("quiet", false, "no progress on stderr")
		cl.Flags.BoolVar(&opts.Verify, "verify", false, "read every LTX file and check its header, pages and checksums (reads the whole log)")
		pos, key, code, done := cellArg(cl, e, args)
		if done {
			return code
		}
		if !*quiet {
			opts.Progress = progress.NewCounter(e.stderr, "inspect", "cells").Update
		}
		return onBucket(ctx, e, cl, pos[0], func(s store.Store) error {
			return admin.Show(ctx, s, key, *asJSON, opts, e.stdout)
		})
	})
}
