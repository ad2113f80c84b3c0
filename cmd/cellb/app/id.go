package app

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/cli"
	"github.com/cellb/cellb/core/store"
)

// defaultScriptName is serve's --script-name: id and --name default to it.
const defaultScriptName = "cellb-example"

func idCommand() appCommand {
	return command("id", "print the cell id a name gets in a class", func(ctx context.Context, e *env, args []string) int {
		cl := newCmdLine("id", "<Class> <name>", "Prints the id (64 hex digits) the name gets in the class, as a node serving\nthe deployment --script-name gives it; --name on restore, inspect and\nrepair resolves a name the same way.", 2, 2, "<Class> <name>")
		script := cl.Flags.String("script-name", defaultScriptName, "deployment `name` (serve's --script-name)")
		pos, code, done := cl.Parse(e.stdout, e.stderr, args)
		if done {
			return code
		}
		id, err := admin.IDFromName(*script, pos[0], pos[1])
		if err != nil {
			return cl.UsageErr(e.stderr, "%v", err)
		}
		fmt.Fprintln(e.stdout, id)
		return 0
	})
}

// cellArg parses a command whose second argument, when given, names a
// cell (with --name, by its name): key is its cell key.
func cellArg(cl *cli.Command, e *env, args []string) (pos []string, key string, code int, done bool) {
	resolve := admin.NameFlags(cl.Flags, defaultScriptName)
	if pos, code, done = cl.Parse(e.stdout, e.stderr, args); done {
		return nil, "", code, true
	}
	if len(pos) > 1 {
		var err error
		if key, err = resolve(pos[1]); err != nil {
			return nil, "", cl.UsageErr(e.stderr, "%v", err), true
		}
	}
	return pos, key, 0, false
}

// onBucket opens the bucket, runs fn on it and turns fn's error into exit
// status 1.
func onBucket(ctx context.Context, e *env, cl *cli.Command, url string, fn func(store.Store) error) int {
	s, err := openBucket(ctx, e.buckets(), url)
	if err == nil {
		defer store.Close(s)
		err = fn(s)
	}
	if err != nil {
		return cl.Fail(e.stderr, oneLine(err))
	}
	return 0
}
