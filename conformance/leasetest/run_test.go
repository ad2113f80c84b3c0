package leasetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// firstNodePanics is a harness whose first NewNode panics.
type firstNodePanics struct {
	Harness
	calls atomic.Int64
}

func (h *firstNodePanics) NewNode(ctx context.Context) (Node, error) {
	if h.calls.Add(1) == 1 {
		panic("first node")
	}
	return h.Harness.NewNode(ctx)
}

// TestRunFailsOnlyThePanickingCase: under Run, a case that panics fails
// as that case's subtest, the cases after it still run and pass, and a
// case the harness cannot support is skipped. The run happens in a child
// process, since its failure is the point.
func TestRunFailsOnlyThePanickingCase(t *testing.T) {
	if os.Getenv("LEASETEST_PANIC_CHILD") == "1" {
		Run(t, &firstNodePanics{Harness: &shardHarness{dir: t.TempDir(), n: 4}})
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunFailsOnlyThePanickingCase$", "-test.v")
	cmd.Env = append(os.Environ(), "LEASETEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run with a panicking case passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestRunFailsOnlyThePanickingCase/" + allCases[0].name,
		"panic: first node",
		"--- PASS: TestRunFailsOnlyThePanickingCase/Exclusive",
		"--- SKIP: TestRunFailsOnlyThePanickingCase/SelfFence",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
}
