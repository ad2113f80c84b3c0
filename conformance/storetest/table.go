package storetest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cellb/cellb/conformance/suite"
)

// WriteTable writes a storetest report for a terminal: a table of the cases
// (name, result, time, the first line of the reason), the notes, and the
// Summary line. quickNote, if not empty, replaces the reason of the cases
// skipped because the run was quick (e.g. "skipped by --quick").
func WriteTable(w io.Writer, rep suite.Report, bucket, quickNote string) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tTIME\tREASON")
	for _, c := range rep.Cases {
		result, elapsed := string(c.Status), "-"
		if c.Status == suite.Failed {
			result = "FAIL"
		}
		if c.Status != suite.Skipped {
			elapsed = formatElapsed(c.Elapsed)
		}
		reason := firstLineOf(c.Reason)
		if c.Status == suite.Skipped && quickNote != "" && strings.Contains(reason, "quick") {
			reason = quickNote
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
	fmt.Fprintln(w, Summary(rep, bucket))
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

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
