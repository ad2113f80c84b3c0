package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/store"
)

// defaultScriptName is serve's --script: id and --name default to it.
const defaultScriptName = "cellb-example"

func idCommand() command {
	return command{name: "id", summary: "print the cell id a name gets in a class", run: func(ctx context.Context, e *env, args []string) int {
		fs := flag.NewFlagSet("id", flag.ContinueOnError)
		script := fs.String("script-name", defaultScriptName, "deployment name (serve's --script)")
		pos, _, code, ok := cmdArgs(e, fs, "usage: cellb id <Class> <name> [--script-name S]", args, 2, 2, nil)
		if !ok {
			return code
		}
		id, err := admin.IDFromName(*script, pos[0], pos[1])
		if err != nil {
			fmt.Fprintf(e.stderr, "cellb id: %v\n", err)
			return 2
		}
		fmt.Fprintln(e.stdout, id)
		return 0
	}}
}

// cmdArgs parses args with fs and wants min to max positional arguments;
// with resolve, pos[1] (when given) is a cell argument and key its cell
// key. On a usage error it writes the usage and ok is false: exit with
// code (0 for --help, 2 otherwise).
func cmdArgs(e *env, fs *flag.FlagSet, usage string, args []string, min, max int, resolve func(string) (string, error)) (pos []string, key string, code int, ok bool) {
	pos, err := parseFlags(fs, args)
	if err == nil && resolve != nil && len(pos) > 1 {
		key, err = resolve(pos[1])
	}
	if err == nil && len(pos) >= min && len(pos) <= max {
		return pos, key, 0, true
	}
	if err != nil && err != flag.ErrHelp {
		fmt.Fprintf(e.stderr, "cellb %s: %v\n", fs.Name(), err)
	}
	fmt.Fprintln(e.stderr, usage+"\n(see docs/cli.md)")
	return nil, "", map[bool]int{true: 0, false: 2}[err == flag.ErrHelp], false
}

// onBucket opens the bucket, runs fn on it and turns fn's error into exit
// status 1.
func onBucket(ctx context.Context, e *env, name, url string, fn func(store.Store) error) int {
	s, err := openBucket(ctx, bucketMux(), url)
	if err == nil {
		defer store.Close(s)
		err = fn(s)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb %s: %v\n", name, oneLine(err))
		return 1
	}
	return 0
}
