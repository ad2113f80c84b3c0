//go:build unix

package fs_test

import (
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/r2test"
)

// TestR2Conformance runs the R2 binding's suite (core/r2 in celld's
// format) over the local-files store.
func TestR2Conformance(t *testing.T) {
	s, err := fs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r2test.Run(t, r2test.Harness{Store: s})
}

// TestR2ConformanceRejectsTwins: over the local-files store too, the R2
// suite rejects each broken binding.
func TestR2ConformanceRejectsTwins(t *testing.T) {
	s, err := fs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r2test.RunTwins(t, r2test.Harness{Store: s})
}
