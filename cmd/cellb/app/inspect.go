package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"

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
		dataDir := cl.Flags.String("data-dir", "", "the `directory` single-host processes serve from, to read their node logs' state (default: the bucket's parent, when the bucket is <data-dir>/bucket)")
		pos, key, code, done := cellArg(cl, e, args)
		if done {
			return code
		}
		opts.LockDir = hostLockDir(*dataDir, pos[0])
		if !*quiet {
			opts.Progress = progress.NewCounter(e.stderr, "inspect", "cells").Update
		}
		return onBucket(ctx, e, cl, pos[0], func(s store.Store) error {
			return admin.Show(ctx, s, key, *asJSON, opts, e.stdout)
		})
	})
}

// hostLockDir is where single-host processes keep their node log
// sessions' locks: <data-dir>/shards/nodelog for --data-dir, or, without
// it, for the embedded default's layout (a files bucket at
// <data-dir>/bucket next to <data-dir>/shards/nodelog). "" when neither.
func hostLockDir(dataDir, bucketURL string) string {
	if dataDir != "" {
		return filepath.Join(dataDir, "shards", "nodelog")
	}
	path, isFile := strings.CutPrefix(bucketURL, "file://")
	if !isFile && strings.Contains(bucketURL, "://") {
		return ""
	}
	dir := filepath.Join(filepath.Dir(filepath.Clean(path)), "shards", "nodelog")
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}
