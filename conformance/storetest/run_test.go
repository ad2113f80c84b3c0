package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// panicsInProbe is a store whose writes under the probe case's directory
// panic.
type panicsInProbe struct{ store.Store }

func (p panicsInProbe) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if strings.Contains(key, "/probe/") {
		panic("put under probe")
	}
	return p.Store.Put(ctx, key, data, opts)
}

// TestRunFailsOnlyThePanickingCase: under Run, a case that panics fails
// as that case's subtest, and the cases after it still run and pass. The
// run happens in a child process, since its failure is the point.
func TestRunFailsOnlyThePanickingCase(t *testing.T) {
	if os.Getenv("STORETEST_PANIC_CHILD") == "1" {
		storetest.Run(t, shared(panicsInProbe{memstore.New()}), suite.Only("probe", "delete", "pagination"), suite.Skip("pagination"))
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunFailsOnlyThePanickingCase$", "-test.v")
	cmd.Env = append(os.Environ(), "STORETEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run with a panicking case passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestRunFailsOnlyThePanickingCase/probe",
		"panic: put under probe",
		"--- PASS: TestRunFailsOnlyThePanickingCase/delete",
		"--- SKIP: TestRunFailsOnlyThePanickingCase/pagination",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
}
