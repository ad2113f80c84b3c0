package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// runtimeSide are the runtime and its logs: the fleet (ownership) reaches
// none of them, even indirectly; it learns the logs' names and prefixes
// from core/layout.
var runtimeSide = []string{prefix + "core/cell", prefix + "core/ltxlog", prefix + "core/changeset", prefix + "core/backup"}

func TestFleetImportsNoRuntimeNorLog(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", prefix+"core/fleet")
	cmd.Dir = workspaceRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, bad := range runtimeSide {
			if line == bad || strings.HasPrefix(line, bad+"/") {
				t.Errorf("core/fleet links %s", line)
			}
		}
	}
}
