package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
)

// CheckBucket runs celld's start-up probe and then the suite (RunReport)
// against a live bucket, for tools that check one (cellb diagnose).
// bucket names it in messages; open opens a client of it: the suite's
// first client is the one the probe ran on, and the second is opened
// when the suite asks for it. A bucket that cannot take even the probe's
// first write is unreachable or unwritable: CheckBucket fails with
// *UnwritableError instead of running every case to fail it. (A probe
// that fails later is left to the suite's probe case to report.) It also
// fails when open does, and with the report's SetupError when the suite
// could not start or ctx ended (RunReport's error).
func CheckBucket(ctx context.Context, bucket string, open func(ctx context.Context) (store.Store, error), opts ...suite.Option) (suite.Report, error) {
	first, err := open(ctx)
	if err != nil {
		return suite.Report{Suite: "storetest"}, err
	}
	if _, err := (store.Prober{Tag: "diagnose"}).Run(ctx, first); err != nil {
		var pe *store.ProbeError
		if !errors.As(err, &pe) || pe.Step == store.ProbeCreate {
			_ = store.Close(first)
			return suite.Report{Suite: "storetest"}, &UnwritableError{Bucket: bucket, Err: err}
		}
	}
	return RunReport(ctx, &bucketHarness{first: first, open: open}, opts...)
}

// UnwritableError: the bucket did not take the probe's first write.
type UnwritableError struct {
	Bucket string
	Err    error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("cannot write to %s: %v", e.Bucket, e.Err)
}
func (e *UnwritableError) Unwrap() error { return e.Err }

// bucketHarness hands the suite the client the probe ran on, and opens
// the second client on demand.
type bucketHarness struct {
	first store.Store
	open  func(ctx context.Context) (store.Store, error)
}

func (h *bucketHarness) MakeStore(context.Context) (store.Store, error) { return h.first, nil }

func (h *bucketHarness) MakeSecondStore(ctx context.Context) (store.Store, error) {
	return h.open(ctx)
}

func (h *bucketHarness) Close() error { return nil }

// Summary is a storetest report in one line naming the bucket, e.g.
// "s3://b: all 17 cases passed" or "s3://b: FAILED 1 of 17 cases
// (pagination); 16 passed, 0 skipped".
func Summary(r suite.Report, bucket string) string {
	passed, failed, skipped := r.Counts()
	total := len(r.Cases)
	switch {
	case failed > 0:
		return fmt.Sprintf("%s: FAILED %d of %d cases (%s); %d passed, %d skipped", bucket, failed, total, strings.Join(r.Failed(), ", "), passed, skipped)
	case skipped > 0:
		return fmt.Sprintf("%s: %d of %d cases passed, %d skipped: not every case ran", bucket, passed, total, skipped)
	default:
		return fmt.Sprintf("%s: all %d cases passed", bucket, total)
	}
}

// BucketReport is a check of a live bucket as a JSON document (cellb
// diagnose --json prints it).
type BucketReport struct {
	Bucket   string `json:"bucket"`
	OK       bool   `json:"ok"`
	Complete bool   `json:"complete"`
	// ExitCode is the exit status of the tool that prints the document;
	// NewBucketReport leaves it zero for the tool to set.
	ExitCode int              `json:"exit_code"`
	Error    string           `json:"error,omitempty"`
	Summary  string           `json:"summary,omitempty"`
	Prefix   string           `json:"prefix,omitempty"`
	Cases    []suite.CaseJSON `json:"cases,omitempty"`
	Notes    []string         `json:"notes,omitempty"`
}

// NewBucketReport is a storetest report as a JSON document about bucket.
func NewBucketReport(r suite.Report, bucket string) BucketReport {
	out := BucketReport{
		Bucket:   bucket,
		OK:       r.OK(),
		Complete: r.Complete(),
		Summary:  Summary(r, bucket),
		Prefix:   r.Prefix,
		Notes:    r.Notes,
	}
	for _, c := range r.Cases {
		out.Cases = append(out.Cases, c.JSON())
	}
	return out
}
