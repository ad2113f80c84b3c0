package layering

import (
	"testing"
)

// runtimeSide are the runtime and its logs: the fleet (ownership) reaches
// none of them, even indirectly; it learns the logs' names and prefixes
// from core/layout.
var runtimeSide = []string{prefix + "core/cell", prefix + "core/ltxlog", prefix + "core/changeset", prefix + "core/backup"}

func TestFleetImportsNoRuntimeNorLog(t *testing.T) {
	for _, p := range deps(t, prefix+"core/fleet") {
		if _, bad := matches(p, runtimeSide); bad {
			t.Errorf("core/fleet links %s", p)
		}
	}
}
