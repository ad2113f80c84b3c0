package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/migrate"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
)

const importAbout = `Writes a SQLite database file (stop what writes it first) or the newest state
of a Litestream v0.5 replica (its directory or bucket URL) into a cell never
written: taken as an activation would (a fleet's bucket, or --data-dir's
shard lock), written as its epoch's snapshot, released; the next activation
restores it (ltx mode, serve's default). docs/migrating.md.`

func importCommand() appCommand {
	return command("import", "write a SQLite database or a Litestream replica into a new cell", func(ctx context.Context, e *env, args []string) int {
		cl := newCmdLine("import", "[<target>] <Class:id> <source>", importAbout, 2, 3, "<bucket-url> (or --data-dir), <Class:id> and <source>")
		dataDir := cl.Flags.String("data-dir", "", "one host's data `directory` (serve's --data-dir) instead of a fleet's bucket")
		resolve := admin.NameFlags(cl.Flags, defaultScriptName)
		pos, code, done := cl.Parse(e.stdout, e.stderr, args)
		if done {
			return code
		}
		if (*dataDir == "") != (len(pos) == 3) {
			return cl.UsageErr(e.stderr, "give a fleet's <bucket-url> or --data-dir, not both or neither")
		}
		target := filepath.Join(*dataDir, "bucket")
		if *dataDir == "" {
			target, pos = pos[0], pos[1:]
		} else if err := os.MkdirAll(target, 0o755); err != nil { // as serve does
			return cl.Fail(e.stderr, err)
		}
		key, err := resolve(pos[0])
		if err != nil {
			return cl.UsageErr(e.stderr, "%v", err)
		}
		open := func(ctx context.Context, url string) (store.Store, error) { return openBucket(ctx, e.buckets(), url) }
		im, err := migrate.Open(ctx, pos[1], "", open)
		if err != nil {
			return cl.Fail(e.stderr, err)
		}
		defer im.Close()
		return onBucket(ctx, e, cl, target, func(s store.Store) error {
			res, err := migrate.Import(ctx, migrate.Target{Bucket: s, DataDir: *dataDir}, key, im)
			if err == nil {
				fmt.Fprintf(e.stdout, "imported %s (%s) into %s at epoch %d: the next activation restores it\n", pos[1], progress.Size(im.Size()), key, res.Epoch)
			}
			return err
		})
	})
}
