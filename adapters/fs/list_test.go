//go:build unix

package fs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// segments are chosen to straddle '/' (0x2f) in byte order: '-' and '.'
// sort before it, '0' and 'A' after it, and "é" is multi-byte, so a walk in
// directory order or path order would list them wrongly.
var segments = []string{"a", "a-b", "a.b", "a0", "A", "b", "é", "a b", "Class:01"}

func randomKey(r *rand.Rand) string {
	depth := 1 + r.IntN(3)
	k := ""
	for i := range depth {
		if i > 0 {
			k += "/"
		}
		k += segments[r.IntN(len(segments))]
	}
	return k
}

// TestListingMatchesMemstore applies one random history of writes and
// deletes to this store and to memstore, then compares every page of
// many listings: prefixes that end inside a segment, at a '/', or at
// nothing; several delimiters; limits from 1 up. Keys that would nest
// inside an object are refused here (ErrKeyConflict) and skipped there.
func TestListingMatchesMemstore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ctx := t.Context()
	s := openT(t, t.TempDir())
	m := memstore.New()
	for i := range 200 {
		k := randomKey(r)
		if r.IntN(4) == 0 {
			if err := s.Delete(ctx, k); err != nil {
				t.Fatalf("delete %q: %v", k, err)
			}
			m.Delete(ctx, k)
			continue
		}
		body := []byte(fmt.Sprintf("%d", i))
		_, err := s.Put(ctx, k, body, store.PutOptions{})
		if errors.Is(err, ErrKeyConflict) {
			continue
		}
		if err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
		if _, err := m.Put(ctx, k, body, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() < 40 {
		t.Fatalf("only %d keys survived; the history is too thin to test listings", m.Len())
	}
	prefixes := []string{"", "a", "a/", "a-", "a/a", "a/b/", "é", "é/", "Class:", "zzz", "a.b/a0/"}
	delims := []string{"", "/", "-", "a", "/a", "é"}
	for _, p := range prefixes {
		for _, d := range delims {
			for _, limit := range []int{0, 1, 2, 3, 7, 1000} {
				comparePages(t, s, m, store.ListOptions{Prefix: p, Delimiter: d, Limit: limit})
			}
		}
	}
}

func comparePages(t *testing.T, got, want store.Store, opts store.ListOptions) {
	t.Helper()
	ctx := t.Context()
	gotOpts, wantOpts := opts, opts
	for page := 0; ; page++ {
		g, err := got.List(ctx, gotOpts)
		if err != nil {
			t.Fatalf("list %+v: %v", gotOpts, err)
		}
		w, err := want.List(ctx, wantOpts)
		if err != nil {
			t.Fatalf("memstore list %+v: %v", wantOpts, err)
		}
		if !slices.Equal(infoKeys(g), infoKeys(w)) || !slices.Equal(g.Prefixes, w.Prefixes) || (g.NextToken == "") != (w.NextToken == "") {
			t.Fatalf("list %+v page %d:\n got objects %q prefixes %q more=%v\nwant objects %q prefixes %q more=%v",
				opts, page, infoKeys(g), g.Prefixes, g.NextToken != "", infoKeys(w), w.Prefixes, w.NextToken != "")
		}
		for i, o := range g.Objects {
			if o.Size != w.Objects[i].Size || o.Version == "" {
				t.Fatalf("list %+v: %q size %d version %q, want size %d", opts, o.Key, o.Size, o.Version, w.Objects[i].Size)
			}
		}
		if g.NextToken == "" {
			return
		}
		gotOpts.Token, wantOpts.Token = g.NextToken, w.NextToken
	}
}

func infoKeys(p store.ListPage) []string {
	out := make([]string, 0, len(p.Objects))
	for _, o := range p.Objects {
		out = append(out, o.Key)
	}
	return out
}

func TestListRejectsBadTokensAndDelimiters(t *testing.T) {
	s := openT(t, t.TempDir())
	for _, tok := range []string{"garbage", "1", "1!!", "0YQ"} {
		if _, err := s.List(t.Context(), store.ListOptions{Token: tok}); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token %q: %v, want ErrInvalidToken", tok, err)
		}
	}
	if _, err := s.List(t.Context(), store.ListOptions{Delimiter: "\xff"}); err == nil {
		t.Error("a delimiter that is not UTF-8 was accepted")
	}
}
