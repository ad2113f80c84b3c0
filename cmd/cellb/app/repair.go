package app

import (
	"context"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/store"
)

func repairCommand() appCommand {
	return command("repair", "diagnose a cell and write the released record it needs (--apply)", func(ctx context.Context, e *env, args []string) int {
		cl := newCmdLine("repair", "<bucket-url> <Class:id>", "Diagnoses the cell (lost or stale ownership record, gap, missing snapshot)\nand prints the one repair the specification allows, the released record at\nthe newest epoch; --apply writes it with a conditional put. It refuses while\na live node holds the cell.", 2, 2, "<bucket-url> <Class:id>")
		apply := cl.Flags.Bool("apply", false, "write the repair (default: only print it)")
		pos, key, code, done := cellArg(cl, e, args)
		if done {
			return code
		}
		return onBucket(ctx, e, cl, pos[0], func(s store.Store) error {
			return admin.Repair(ctx, s, key, *apply, admin.Options{}, e.stdout)
		})
	})
}
