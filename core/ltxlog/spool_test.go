package ltxlog

import (
	"os"
	"testing"
)

// spoolOf is a spool holding img, as Open makes one.
func spoolOf(t *testing.T, img []byte) *spool {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "spool-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(img); err != nil {
		t.Fatal(err)
	}
	return &spool{f: f, size: int64(len(img))}
}
