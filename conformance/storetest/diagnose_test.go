package storetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// Diagnose writes the table or the JSON document and returns the exit
// status: quick runs are incomplete (3), a bucket that cannot be checked
// fails (1) with a JSON document holding the error's first line.
func TestDiagnoseReportsAndExitCodes(t *testing.T) {
	shared := memstore.New()
	mem := func(context.Context) (store.Store, error) { return shared, nil }
	var out, progress bytes.Buffer
	code, err := storetest.Diagnose(t.Context(), &out, "mem://b", mem, storetest.DiagnoseOptions{Quick: true,
		Options: []suite.Option{storetest.ProgressLines(&progress, "tool")}})
	if err != nil || code != suite.ExitIncomplete || !strings.Contains(out.String(), "skipped by --quick") {
		t.Fatalf("quick: exit %d, %v, table:\n%s", code, err, out.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "tool: ") {
			t.Errorf("progress line %q lacks the prefix", line)
		}
	}
	out.Reset()
	code, err = storetest.Diagnose(t.Context(), &out, "mem://b", mem, storetest.DiagnoseOptions{JSON: true, Quick: true})
	var js storetest.BucketReport
	if jerr := json.Unmarshal(out.Bytes(), &js); err != nil || jerr != nil || js.ExitCode != code || code != suite.ExitIncomplete || !js.OK || js.Complete {
		t.Fatalf("quick --json: exit %d, %v, %v, document:\n%s", code, err, jerr, out.String())
	}
	out.Reset()
	boom := errors.New("no such bucket\nsecond line")
	code, err = storetest.Diagnose(t.Context(), &out, "x://b", func(context.Context) (store.Store, error) { return nil, boom }, storetest.DiagnoseOptions{JSON: true})
	js = storetest.BucketReport{}
	if jerr := json.Unmarshal(out.Bytes(), &js); !errors.Is(err, boom) || code != suite.ExitFailed || jerr != nil || js.Error != "no such bucket" || js.ExitCode != suite.ExitFailed {
		t.Fatalf("unopenable --json: exit %d, %v, document:\n%s", code, err, out.String())
	}
}

// ExitCode: failed beats skipped, which beats passed.
func TestReportExitCode(t *testing.T) {
	pass := suite.CaseResult{Status: suite.Passed}
	for _, c := range []struct {
		rep  suite.Report
		want int
	}{
		{suite.Report{Cases: []suite.CaseResult{pass}}, suite.ExitOK},
		{suite.Report{Cases: []suite.CaseResult{pass, {Status: suite.Skipped}}}, suite.ExitIncomplete},
		{suite.Report{Cases: []suite.CaseResult{{Status: suite.Skipped}, {Status: suite.Failed}}}, suite.ExitFailed},
		{suite.Report{SetupError: "no"}, suite.ExitFailed},
	} {
		if got := c.rep.ExitCode(); got != c.want {
			t.Errorf("%+v: ExitCode %d, want %d", c.rep, got, c.want)
		}
	}
}
