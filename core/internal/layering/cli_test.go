package layering

import (
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
	for _, p := range deps(t, prefix+"cmd/...") {
		if _, bad := matches(p, testDoubles); bad {
			t.Errorf("the CLI links the test double %s", p)
		}
	}
}
