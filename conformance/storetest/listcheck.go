package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// listing is a whole listing gathered page by page.
type listing struct {
	objects  []store.ObjectInfo
	prefixes []string
	pages    int
}

func (l listing) keys() []string {
	out := make([]string, len(l.objects))
	for i, o := range l.objects {
		out[i] = o.Key
	}
	return out
}

// entries merges objects and prefixes in byte order.
func (l listing) entries() []string {
	out := append(l.keys(), l.prefixes...)
	slices.Sort(out)
	return out
}

// listChecked follows a listing to its end and reports every broken rule
// of the port: entries out of byte order within or across pages,
// duplicates, entries outside the prefix, pages over the limit, and tokens
// that repeat. It returns what it saw; a listing error ends the case.
func listChecked(t tb, ctx context.Context, s store.Store, opts store.ListOptions) listing {
	t.Helper()
	var l listing
	var last string // greatest entry of the pages so far
	tokens := map[string]bool{}
	opts.Token = ""
	limit := opts.Limit
	if limit <= 0 {
		limit = 1000
	}
	desc := fmt.Sprintf("list prefix %q delimiter %q limit %d", opts.Prefix, opts.Delimiter, opts.Limit)
	for {
		if l.pages == maxPages {
			t.Fatalf("%s: no end after %d pages", desc, maxPages)
		}
		page, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("%s (page %d): %v", desc, l.pages+1, err)
		}
		l.pages++
		where := fmt.Sprintf("%s, page %d", desc, l.pages)
		if n := len(page.Objects) + len(page.Prefixes); n > limit {
			t.Errorf("%s: %d entries, more than the limit of %d", where, n, limit)
		}
		var pageEntries []string
		for i, o := range page.Objects {
			if i > 0 && o.Key <= page.Objects[i-1].Key {
				t.Errorf("%s: objects out of byte order or repeated: %q after %q", where, o.Key, page.Objects[i-1].Key)
			}
			pageEntries = append(pageEntries, o.Key)
		}
		for i, p := range page.Prefixes {
			if i > 0 && p <= page.Prefixes[i-1] {
				t.Errorf("%s: prefixes out of byte order or repeated: %q after %q", where, p, page.Prefixes[i-1])
			}
			if opts.Delimiter == "" {
				t.Errorf("%s: common prefix %q without a delimiter", where, p)
			} else if !strings.HasSuffix(p, opts.Delimiter) {
				t.Errorf("%s: common prefix %q does not end with the delimiter", where, p)
			}
			pageEntries = append(pageEntries, p)
		}
		for _, e := range pageEntries {
			if !strings.HasPrefix(e, opts.Prefix) {
				t.Errorf("%s: entry %q is outside the prefix", where, e)
			}
			if last != "" && e <= last {
				t.Errorf("%s: entry %q does not sort after %q from an earlier page (duplicate or out of order)", where, e, last)
			}
		}
		if len(pageEntries) > 0 {
			last = max(last, slices.Max(pageEntries))
		}
		l.objects = append(l.objects, page.Objects...)
		l.prefixes = append(l.prefixes, page.Prefixes...)
		if page.NextToken == "" {
			return l
		}
		if tokens[page.NextToken] {
			t.Fatalf("%s: continuation token %q repeated", where, page.NextToken)
		}
		tokens[page.NextToken] = true
		opts.Token = page.NextToken
	}
}

// sameStrings fails the case unless got equals want, naming what is
// missing and what is extra.
func sameStrings(t tb, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	gotSet, wantSet := map[string]int{}, map[string]bool{}
	for _, g := range got {
		gotSet[g]++
	}
	for _, w := range want {
		wantSet[w] = true
	}
	var missing, extra, dup []string
	for _, w := range want {
		if gotSet[w] == 0 {
			missing = append(missing, w)
		}
	}
	for g, n := range gotSet {
		if !wantSet[g] {
			extra = append(extra, g)
		}
		if n > 1 {
			dup = append(dup, g)
		}
	}
	slices.Sort(extra)
	slices.Sort(dup)
	switch {
	case len(missing)+len(extra)+len(dup) == 0:
		t.Errorf("%s: right entries in the wrong order:\n got %s\nwant %s", what, short(got), short(want))
	default:
		t.Errorf("%s: %d missing %s, %d unexpected %s, %d repeated %s", what,
			len(missing), short(missing), len(extra), short(extra), len(dup), short(dup))
	}
}

// short prints at most a handful of strings.
func short(s []string) string {
	if len(s) > 6 {
		return fmt.Sprintf("%q... (%d in all)", s[:6], len(s))
	}
	return fmt.Sprintf("%q", s)
}
