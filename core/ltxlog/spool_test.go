package ltxlog

import (
	"testing"

	"github.com/cellb/cellb/core/internal/imagespool"
)

// spoolOf is a spool holding img, as Open makes one.
func spoolOf(t *testing.T, img []byte) *spool {
	t.Helper()
	s, err := imagespool.Of(t.TempDir(), img)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
