package gcs

import (
	"errors"
	"strings"
	"testing"
)

func TestPrefixSuccessor(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"d1/", "d10"},
		{"a/b/", "a/b0"},
		{"a\xff", "b"},
	} {
		if got := prefixSuccessor(c.in); got != c.want {
			t.Errorf("prefixSuccessor(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseTokenRejectsForeignTokens(t *testing.T) {
	for _, tok := range []string{"", "x", "o", "oother/k", "s", "spre/", "zpre/k", "opre"} {
		if _, _, err := parseToken(tok, "pre/"); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token %q: %v, want ErrInvalidToken", tok, err)
		}
	}
	start, skip, err := parseToken("opre/k", "pre/")
	if err != nil || start != "pre/k" || skip != "pre/k" {
		t.Errorf(`"opre/k" = %q %q %v`, start, skip, err)
	}
	start, skip, err = parseToken("spre/d0", "pre/")
	if err != nil || start != "pre/d0" || skip != "" {
		t.Errorf(`"spre/d0" = %q %q %v`, start, skip, err)
	}
}

// FuzzParseToken checks that any token either fails with ErrInvalidToken
// or starts strictly inside the listing prefix, so a forged token cannot
// move a listing outside it.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"", "o", "opre/k", "spre/d0", "x", "spre/", "o\xffpre"} {
		f.Add(s, "pre/")
	}
	f.Fuzz(func(t *testing.T, tok, prefix string) {
		start, skip, err := parseToken(tok, prefix)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("error %v is not ErrInvalidToken", err)
			}
			return
		}
		if !strings.HasPrefix(start, prefix) || start == prefix {
			t.Fatalf("start %q is outside prefix %q", start, prefix)
		}
		if skip != "" && skip != start {
			t.Fatalf("skip %q differs from start %q", skip, start)
		}
	})
}
