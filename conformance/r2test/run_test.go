package r2test_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/conformance/r2test"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestRunFailsOnlyThePanickingCase: under Run, a case that panics fails
// as that case's subtest, and the cases after it still run and pass. The
// run happens in a child process, since its failure is the point.
func TestRunFailsOnlyThePanickingCase(t *testing.T) {
	if os.Getenv("R2TEST_PANIC_CHILD") == "1" {
		var calls atomic.Int64
		r2test.Run(t, r2test.Harness{Store: memstore.New(), Bind: func(s store.Store, bucket string) (r2test.Binding, error) {
			if calls.Add(1) == 1 {
				panic("first binding")
			}
			return r2test.Real(s, bucket)
		}})
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunFailsOnlyThePanickingCase$", "-test.v")
	cmd.Env = append(os.Environ(), "R2TEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run with a panicking case passed:\n%s", out)
	}
	names := r2test.CaseNames()
	for _, want := range []string{
		"--- FAIL: TestRunFailsOnlyThePanickingCase/" + names[0],
		"panic: first binding",
		"--- PASS: TestRunFailsOnlyThePanickingCase/" + names[len(names)-1],
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
}

// TestReportAfterTheContextEndedPassesNothing: a RunReport whose context
// has ended runs no case and fails with the context's error rather than
// reporting a clean run.
func TestReportAfterTheContextEndedPassesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := r2test.RunReport(ctx, r2test.Harness{Store: memstore.New()})
	if !errors.Is(err, context.Canceled) || rep.Complete() {
		t.Fatalf("RunReport after the end: %v, %s", err, rep)
	}
	for _, name := range r2test.CaseNames() {
		if r, _ := rep.Case(name); r.Status != suite.Skipped || r.Reason != "not run: context canceled" {
			t.Errorf("case %s after the context ended: %+v", name, r)
		}
	}
}
