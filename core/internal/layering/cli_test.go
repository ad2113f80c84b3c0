package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// testDoubles are packages that exist for tests: the in-memory bucket
// (the mem:// scheme), the fault-injecting store and the broken twins.
var testDoubles = []string{
	prefix + "core/store/memstore",
	prefix + "core/store/faultstore",
	prefix + "conformance/storetest/brokenstore",
}

// TestCLIShipsNoTestDoubles checks the whole non-test import graph of the
// CLI: the binary opens only real buckets (its URL mux has no mem://).
func TestCLIShipsNoTestDoubles(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", prefix+"cmd/...")
	cmd.Dir = workspaceRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, bad := range testDoubles {
			if line == bad || strings.HasPrefix(line, bad+"/") {
				t.Errorf("the CLI links the test double %s", line)
			}
		}
	}
}
