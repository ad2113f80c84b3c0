package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/core/store"
)

// Exit statuses of diagnose.
const (
	diagnoseOK         = 0 // every case ran and passed
	diagnoseFailed     = 1 // a case failed, or the bucket could not be used
	diagnoseUsage      = 2 // bad flags or arguments
	diagnoseIncomplete = 3 // every case that ran passed, but some were skipped
)

func diagnoseCommand() command {
	return command{
		name:    "diagnose",
		summary: "check that a bucket keeps the promises CellB relies on",
		run: func(ctx context.Context, e *env, args []string) int {
			return diagnose(ctx, e, args, bucketMux())
		},
	}
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
	quick := cl.fs.Bool("quick", false, "skip the large-object and contention cases")
	asJSON := cl.fs.Bool("json", false, "print the report as JSON instead of a table")
	largeMiB := cl.fs.Int("large-mib", storetest.DefaultLargeObjectSize>>20, "size of the large-object case in MiB")
	quiet := cl.fs.Bool("quiet", false, "no progress lines on stderr")
	pos, code, done := cl.parse(e, args)
	if done {
		return code
	}
	if *largeMiB < 1 {
		return cl.usageErr(e, "--large-mib must be at least 1")
	}
	rawURL := pos[0]

	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "cellb diagnose: %v\n", oneLine(err))
		if *asJSON {
			writeJSON(e.stdout, storetest.BucketReport{Bucket: rawURL, Error: oneLine(err).Error(), ExitCode: diagnoseFailed})
		}
		return diagnoseFailed
	}
	opts := []storetest.Option{storetest.LargeObjectSize(*largeMiB << 20)}
	if !*quiet {
		opts = append(opts, storetest.Progress((&progressPrinter{w: e.stderr}).print))
	}
	if *quick {
		opts = append(opts, storetest.Quick())
	}
	rep, err := storetest.CheckBucket(ctx, rawURL, func(ctx context.Context) (store.Store, error) {
		return openBucket(ctx, mux, rawURL)
	}, opts...)
	if err != nil {
		return fail(err)
	}
	code = exitCode(rep)
	if *asJSON {
		js := rep.BucketReport(rawURL)
		js.ExitCode = code
		writeJSON(e.stdout, js)
	} else {
		writeTable(e.stdout, rawURL, rep, *quick)
	}
	return code
}

func exitCode(rep storetest.Report) int {
	switch {
	case !rep.OK():
		return diagnoseFailed
	case !rep.Complete():
		return diagnoseIncomplete
	default:
		return diagnoseOK
	}
}

// progressPrinter writes progress lines to stderr; the suite may call it
// from several goroutines.
type progressPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progressPrinter) print(caseName, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "cellb diagnose: %s: %s\n", caseName, msg)
}

func writeTable(w io.Writer, bucket string, rep storetest.Report, quick bool) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tTIME\tREASON")
	for _, c := range rep.Cases {
		result, elapsed := string(c.Status), "-"
		if c.Status == storetest.Failed {
			result = "FAIL"
		}
		if c.Status != storetest.Skipped {
			elapsed = formatElapsed(c.Elapsed)
		}
		reason := firstLine(c.Reason)
		if c.Status == storetest.Skipped && quick && strings.Contains(reason, "quick") {
			reason = "skipped by --quick"
		}
		if n := len(c.Failures); n > 1 {
			reason += fmt.Sprintf(" (and %d more)", n-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, result, elapsed, reason)
	}
	_ = tw.Flush()
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, rep.Summary(bucket))
}

func formatElapsed(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
