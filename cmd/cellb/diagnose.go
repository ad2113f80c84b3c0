package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
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

const diagnoseUsageText = `usage: cellb diagnose [--quick] [--json] [--large-mib N] <bucket-url>

Runs celld's start-up probe and the store conformance suite against a live
bucket, writing only under storetest/<run id>/ and deleting what it writes.

  --quick        skip the large-object and contention cases
  --json         print the report as JSON instead of a table
  --large-mib N  size of the large-object case in MiB (default 64)

Exit status: 0 every case ran and passed; 1 a case failed or the bucket
could not be used; 2 bad usage; 3 every case that ran passed but some were
skipped (--quick).
`

// diagnose is the command with an injectable URL mux, so tests can
// point it at in-memory and deliberately broken buckets.
func diagnose(ctx context.Context, e *env, args []string, mux *store.URLMux) int {
	fs := flag.NewFlagSet("diagnose", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "")
	asJSON := fs.Bool("json", false, "")
	largeMiB := fs.Int("large-mib", storetest.DefaultLargeObjectSize>>20, "")
	help := fs.Bool("help", false, "")
	fs.BoolVar(help, "h", false, "")
	pos, err := parseFlags(fs, args)
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "cellb diagnose: %v\n\n%s", err, diagnoseUsageText)
		return diagnoseUsage
	case *help:
		fmt.Fprint(e.stdout, diagnoseUsageText)
		return diagnoseOK
	case len(pos) != 1:
		fmt.Fprintf(e.stderr, "cellb diagnose: want one bucket URL, got %d arguments\n\n%s", len(pos), diagnoseUsageText)
		return diagnoseUsage
	case *largeMiB < 1:
		fmt.Fprintf(e.stderr, "cellb diagnose: --large-mib must be at least 1\n")
		return diagnoseUsage
	}
	rawURL := pos[0]

	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "cellb diagnose: %v\n", oneLine(err))
		if *asJSON {
			writeJSON(e.stdout, diagnoseJSON{Bucket: rawURL, Error: oneLine(err).Error(), ExitCode: diagnoseFailed})
		}
		return diagnoseFailed
	}
	first, err := openBucket(ctx, mux, rawURL)
	if err != nil {
		return fail(err)
	}
	// A bucket that cannot take even the first write of the probe is
	// unreachable or unwritable: say so in one line instead of failing
	// every case.
	if _, err := (store.Prober{Tag: "diagnose"}).Run(ctx, first); err != nil {
		var pe *store.ProbeError
		if !errors.As(err, &pe) || pe.Step == store.ProbeCreate {
			_ = store.Close(first)
			return fail(fmt.Errorf("cannot write to %s: %w", rawURL, err))
		}
	}

	progress := &progressPrinter{w: e.stderr}
	opts := []storetest.Option{
		storetest.LargeObjectSize(*largeMiB << 20),
		storetest.Progress(progress.print),
	}
	if *quick {
		opts = append(opts, storetest.Quick())
	}
	h := &diagnoseHarness{first: first, open: func(ctx context.Context) (store.Store, error) {
		return openBucket(ctx, mux, rawURL)
	}}
	rep := storetest.RunReport(ctx, h, opts...)
	if rep.SetupError != "" {
		return fail(errors.New(rep.SetupError))
	}
	code := exitCode(rep)
	if *asJSON {
		writeJSON(e.stdout, reportJSON(rawURL, rep, code))
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

// diagnoseHarness hands the suite the client diagnose already probed with,
// and opens the second client on demand.
type diagnoseHarness struct {
	first store.Store
	open  func(ctx context.Context) (store.Store, error)
}

func (h *diagnoseHarness) MakeStore(context.Context) (store.Store, error) { return h.first, nil }

func (h *diagnoseHarness) MakeSecondStore(ctx context.Context) (store.Store, error) {
	return h.open(ctx)
}

func (h *diagnoseHarness) Close() {}

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
	fmt.Fprintln(w, summaryLine(bucket, rep))
}

func summaryLine(bucket string, rep storetest.Report) string {
	passed, failed, skipped := rep.Counts()
	total := len(rep.Cases)
	switch {
	case failed > 0:
		return fmt.Sprintf("%s: FAILED %d of %d cases (%s); %d passed, %d skipped", bucket, failed, total, strings.Join(rep.FailedCases(), ", "), passed, skipped)
	case skipped > 0:
		return fmt.Sprintf("%s: %d of %d cases passed, %d skipped: not every case ran", bucket, passed, total, skipped)
	default:
		return fmt.Sprintf("%s: all %d cases passed", bucket, total)
	}
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

// diagnoseJSON is the --json output.
type diagnoseJSON struct {
	Bucket   string     `json:"bucket"`
	OK       bool       `json:"ok"`
	Complete bool       `json:"complete"`
	ExitCode int        `json:"exit_code"`
	Error    string     `json:"error,omitempty"`
	Summary  string     `json:"summary,omitempty"`
	Prefix   string     `json:"prefix,omitempty"`
	Cases    []caseJSON `json:"cases,omitempty"`
	Notes    []string   `json:"notes,omitempty"`
}

type caseJSON struct {
	Name     string   `json:"name"`
	Summary  string   `json:"summary"`
	Result   string   `json:"result"`
	Seconds  float64  `json:"seconds"`
	Reason   string   `json:"reason,omitempty"`
	Failures []string `json:"failures,omitempty"`
	Log      []string `json:"log,omitempty"`
}

func reportJSON(bucket string, rep storetest.Report, code int) diagnoseJSON {
	out := diagnoseJSON{
		Bucket:   bucket,
		OK:       rep.OK(),
		Complete: rep.Complete(),
		ExitCode: code,
		Summary:  summaryLine(bucket, rep),
		Prefix:   rep.Prefix,
		Notes:    rep.Notes,
	}
	for _, c := range rep.Cases {
		out.Cases = append(out.Cases, caseJSON{
			Name: c.Name, Summary: c.Summary, Result: string(c.Status), Seconds: c.Elapsed.Seconds(),
			Reason: c.Reason, Failures: c.Failures, Log: c.Log,
		})
	}
	return out
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
