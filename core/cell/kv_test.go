package cell

import "testing"

func TestPrefixUpperBound(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "ab": "ac", "a\xff": "b", "\xff\xff": "", "é": "\xc3\xaa"} {
		got, ok := prefixUpperBound(in)
		if want == "" {
			if ok {
				t.Errorf("prefixUpperBound(%q) = %q, want none", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("prefixUpperBound(%q) = %q, want %q", in, got, want)
		}
	}
}
