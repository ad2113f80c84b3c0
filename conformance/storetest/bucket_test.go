package storetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// readOnly fails every write, like a bucket without write permission.
type readOnly struct{ store.Store }

var errDenied = errors.New("403 AccessDenied")

func (readOnly) Put(_ context.Context, key string, _ []byte, _ store.PutOptions) (store.Version, error) {
	return "", &store.OpError{Op: "put", Key: key, Err: errDenied}
}

// A bucket that cannot take the probe's first write fails CheckBucket
// with *UnwritableError naming it, and no case runs.
func TestCheckBucketUnwritable(t *testing.T) {
	opened := 0
	_, err := storetest.CheckBucket(t.Context(), "ro://b", func(context.Context) (store.Store, error) {
		opened++
		return readOnly{memstore.New()}, nil
	})
	var ue *storetest.UnwritableError
	if !errors.As(err, &ue) || ue.Bucket != "ro://b" || !errors.Is(err, errDenied) || !strings.HasPrefix(err.Error(), "cannot write to ro://b: ") {
		t.Fatalf("err = %v, want *UnwritableError naming ro://b", err)
	}
	if opened != 1 {
		t.Fatalf("opened %d clients, want only the probe's", opened)
	}
}

// A bucket that cannot be opened fails CheckBucket with open's error.
func TestCheckBucketOpenFails(t *testing.T) {
	boom := errors.New("no such bucket")
	if _, err := storetest.CheckBucket(t.Context(), "x://b", func(context.Context) (store.Store, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want open's", err)
	}
}

// A writable bucket runs the suite on the probed client and a second one.
func TestCheckBucketRunsTheSuite(t *testing.T) {
	s := memstore.New()
	opened := 0
	rep, err := storetest.CheckBucket(t.Context(), "mem://b", func(context.Context) (store.Store, error) {
		opened++
		return s, nil
	}, suite.Quick())
	if err != nil || !rep.OK() || len(rep.Cases) != len(storetest.Cases()) {
		t.Fatalf("CheckBucket = %v, %v", rep, err)
	}
	if opened != 2 {
		t.Fatalf("opened %d clients, want 2 (the probed one and the second)", opened)
	}
}

func TestReportSummaryAndJSON(t *testing.T) {
	rep := suite.Report{Prefix: "storetest/x/", Notes: []string{"n"}, Cases: []suite.CaseResult{
		{Name: "a", Summary: "sa", Status: suite.Passed, Elapsed: 1500 * time.Millisecond},
		{Name: "b", Status: suite.Failed, Reason: "r", Failures: []string{"r", "s"}},
		{Name: "c", Status: suite.Skipped, Reason: "quick"},
	}}
	if got, want := storetest.Summary(rep, "s3://b"), "s3://b: FAILED 1 of 3 cases (b); 1 passed, 1 skipped"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	rep.Cases = rep.Cases[:1]
	if got, want := storetest.Summary(rep, "s3://b"), "s3://b: all 1 cases passed"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	rep.Cases = append(rep.Cases, suite.CaseResult{Name: "c", Status: suite.Skipped})
	if got, want := storetest.Summary(rep, "s3://b"), "s3://b: 1 of 2 cases passed, 1 skipped: not every case ran"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	js := storetest.NewBucketReport(rep, "s3://b")
	js.ExitCode = 3
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bucket":"s3://b","ok":true,"complete":false,"exit_code":3,"summary":"s3://b: 1 of 2 cases passed, 1 skipped: not every case ran","prefix":"storetest/x/",` +
		`"cases":[{"name":"a","summary":"sa","result":"pass","seconds":1.5},{"name":"c","result":"skip","seconds":0}],"notes":["n"]}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
}
