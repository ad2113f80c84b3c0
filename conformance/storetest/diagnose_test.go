package storetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
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
		Options: []storetest.Option{storetest.ProgressLines(&progress, "tool")}})
	if err != nil || code != storetest.ExitIncomplete || !strings.Contains(out.String(), "skipped by --quick") {
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
	if jerr := json.Unmarshal(out.Bytes(), &js); err != nil || jerr != nil || js.ExitCode != code || code != storetest.ExitIncomplete || !js.OK || js.Complete {
		t.Fatalf("quick --json: exit %d, %v, %v, document:\n%s", code, err, jerr, out.String())
	}
	out.Reset()
	boom := errors.New("no such bucket\nsecond line")
	code, err = storetest.Diagnose(t.Context(), &out, "x://b", func(context.Context) (store.Store, error) { return nil, boom }, storetest.DiagnoseOptions{JSON: true})
	js = storetest.BucketReport{}
	if jerr := json.Unmarshal(out.Bytes(), &js); !errors.Is(err, boom) || code != storetest.ExitFailed || jerr != nil || js.Error != "no such bucket" || js.ExitCode != storetest.ExitFailed {
		t.Fatalf("unopenable --json: exit %d, %v, document:\n%s", code, err, out.String())
	}
}

// ExitCode: failed beats skipped, which beats passed.
func TestReportExitCode(t *testing.T) {
	pass := storetest.CaseResult{Status: storetest.Passed}
	for _, c := range []struct {
		rep  storetest.Report
		want int
	}{
		{storetest.Report{Cases: []storetest.CaseResult{pass}}, storetest.ExitOK},
		{storetest.Report{Cases: []storetest.CaseResult{pass, {Status: storetest.Skipped}}}, storetest.ExitIncomplete},
		{storetest.Report{Cases: []storetest.CaseResult{{Status: storetest.Skipped}, {Status: storetest.Failed}}}, storetest.ExitFailed},
		{storetest.Report{SetupError: "no"}, storetest.ExitFailed},
	} {
		if got := c.rep.ExitCode(); got != c.want {
			t.Errorf("%+v: ExitCode %d, want %d", c.rep, got, c.want)
		}
	}
}
