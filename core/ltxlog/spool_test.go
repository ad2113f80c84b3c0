package ltxlog

import "testing"

// spoolOf is a spool holding img, as Open makes one.
func spoolOf(t *testing.T, img []byte) *spool {
	t.Helper()
	s := &spool{dir: t.TempDir()}
	if _, err := s.Write(img); err != nil {
		t.Fatal(err)
	}
	if s.bw != nil {
		if err := s.bw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
