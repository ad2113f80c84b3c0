package app

import (
	"context"
	"fmt"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/cli"
	"github.com/cellb/cellb/core/store"
)

// Exit statuses of diagnose.
const (
	diagnoseOK         = suite.ExitOK         // every case ran and passed
	diagnoseFailed     = suite.ExitFailed     // a case failed, or the bucket could not be used
	diagnoseUsage      = cli.ExitUsage        // bad flags or arguments
	diagnoseIncomplete = suite.ExitIncomplete // every case that ran passed, but some were skipped
)

func diagnoseCommand() appCommand {
	return command("diagnose", "check that a bucket keeps the promises CellB relies on",
		func(ctx context.Context, e *env, args []string) int {
			return diagnose(ctx, e, args, e.buckets())
		})
}

const diagnoseAbout = `Runs celld's start-up probe and the store conformance suite against a live
bucket, writing only under storetest/<run id>/ (and the probe's key) and
deleting what it writes: the bucket holds the same keys afterwards.
Progress goes to stderr, the report to stdout.

Exit status: 0 every case ran and passed; 1 a case failed or the bucket
could not be used; 2 bad usage; 3 every case that ran passed but some were
skipped (--quick).`

// diagnose is the command with an injectable URL mux, so tests can
// point it at in-memory and deliberately broken buckets.
func diagnose(ctx context.Context, e *env, args []string, mux *store.URLMux) int {
	cl := newCmdLine("diagnose", "<bucket-url>", diagnoseAbout, 1, 1, "one bucket URL")
	quick := cl.Flags.Bool("quick", false, "skip the large-object and contention cases")
	asJSON := cl.Flags.Bool("json", false, "print the report as JSON instead of a table")
	largeMiB := cl.Flags.Int("large-mib", storetest.DefaultLargeObjectSize>>20, "size of the large-object case in `MiB`")
	quiet := cl.Flags.Bool("quiet", false, "no progress lines on stderr")
	pos, code, done := cl.Parse(e.stdout, e.stderr, args)
	if done {
		return code
	}
	if *largeMiB < 1 {
		return cl.UsageErr(e.stderr, "--large-mib must be at least 1")
	}
	rawURL := pos[0]
	o := storetest.DiagnoseOptions{JSON: *asJSON, Quick: *quick, Options: []suite.Option{storetest.LargeObjectSize(*largeMiB << 20)}}
	if !*quiet {
		o.Options = append(o.Options, storetest.ProgressLines(e.stderr, "cellb diagnose"))
	}
	// diagnose changes nothing: in a files bucket that had no store
	// directory, the one its writes made goes again once they are deleted.
	if dir := fsstore.FreshDir(mux, rawURL); dir != "" {
		defer fsstore.RemoveUnusedMeta(dir)
	}
	code, err := storetest.Diagnose(ctx, e.stdout, rawURL, func(ctx context.Context) (store.Store, error) {
		return openBucket(ctx, mux, rawURL)
	}, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb diagnose: %v\n", oneLine(err))
	}
	return code
}
