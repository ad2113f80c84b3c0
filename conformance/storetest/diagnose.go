package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
)

// DiagnoseOptions are how Diagnose checks a bucket and reports it.
type DiagnoseOptions struct {
	// JSON prints the BucketReport as indented JSON instead of the table.
	JSON bool
	// Quick skips the large-object and contention cases (Quick); the
	// table says they were "skipped by --quick".
	Quick bool
	// Options are further options of the run (LargeObjectSize,
	// suite.Progress).
	Options []suite.Option
}

// Diagnose checks a live bucket (CheckBucket) and writes its report to w,
// as a table or as JSON, and returns the exit status
// (suite.Report.ExitCode). When the bucket could not be checked it
// returns suite.ExitFailed and the error; with JSON it has then written a
// BucketReport holding the error's first line.
func Diagnose(ctx context.Context, w io.Writer, bucket string, open func(ctx context.Context) (store.Store, error), o DiagnoseOptions) (int, error) {
	opts := o.Options
	if o.Quick {
		opts = append(opts, suite.Quick())
	}
	rep, err := CheckBucket(ctx, bucket, open, opts...)
	if err != nil {
		if o.JSON {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			writeJSON(w, BucketReport{Bucket: bucket, Error: msg, ExitCode: suite.ExitFailed})
		}
		return suite.ExitFailed, err
	}
	code := rep.ExitCode()
	if o.JSON {
		js := NewBucketReport(rep, bucket)
		js.ExitCode = code
		writeJSON(w, js)
		return code, nil
	}
	quickNote := ""
	if o.Quick {
		quickNote = "skipped by --quick"
	}
	WriteTable(w, rep, bucket, quickNote)
	return code, nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ProgressLines is a suite.Progress option writing each message to w as a
// line "<prefix>: <case>: <message>"; the suite may report from several
// goroutines, so lines are written one at a time.
func ProgressLines(w io.Writer, prefix string) suite.Option {
	var mu sync.Mutex
	return suite.Progress(func(caseName, msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s: %s: %s\n", prefix, caseName, msg)
	})
}
