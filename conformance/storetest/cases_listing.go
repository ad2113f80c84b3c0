package storetest

import (
	"context"
	"fmt"
	"slices"

	"github.com/cellb/cellb/core/store"
)

// writeAll writes every key (relative to the case prefix) with a distinct
// body, in parallel, and ends the case if a write fails.
func writeAll(t tb, e *env, rels []string) {
	t.Helper()
	errs := make([]error, len(rels))
	parallel(len(rels), 16, func(i int) {
		_, errs[i] = e.s.Put(e.ctx, e.key(rels[i]), e.body(rels[i]), store.PutOptions{})
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %s: %v", e.key(rels[i]), err)
		}
	}
}

// full turns case-relative names into full keys.
func (e *env) full(rels ...string) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = e.key(r)
	}
	return out
}

func testListOrder(t tb, e *env) {
	// In byte order. Case-insensitive order would put "a" next to "A";
	// natural order would put "b9" before "b10"; path-aware order (a
	// directory walk) would put "m/1" before "m-1", because it compares
	// "m" with "m-1" first.
	want := []string{
		"A", "B", "Z",
		"a", "a-b", "a.b", "a0", "a_b", "a~",
		"b10", "b9",
		"m-1", "m/1", "m/2/x", "m0",
		"z",
		"~",
		"é",
		"日本",
	}
	if !slices.IsSorted(want) {
		t.Fatalf("the suite's own expectation is not sorted")
	}
	shuffled := slices.Clone(want)
	slices.Reverse(shuffled)
	writeAll(t, e, shuffled)

	for _, limit := range []int{0, 1, 4} {
		l := listChecked(t, e.ctx, e.s, store.ListOptions{Prefix: e.prefix, Limit: limit})
		sameStrings(t, fmt.Sprintf("listing with limit %d", limit), l.keys(), e.full(want...))
	}
	// A prefix is a plain string prefix, not a directory.
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a", []string{"a", "a-b", "a.b", "a0", "a_b", "a~"}},
		{"m", []string{"m-1", "m/1", "m/2/x", "m0"}},
		{"m/", []string{"m/1", "m/2/x"}},
		{"b1", []string{"b10"}},
		{"nothing", nil},
	} {
		l := listChecked(t, e.ctx, e.s2, store.ListOptions{Prefix: e.key(tc.prefix)})
		sameStrings(t, fmt.Sprintf("listing prefix %q", tc.prefix), l.keys(), e.full(tc.want...))
	}
}

func testDelimiter(t tb, e *env) {
	writeAll(t, e, []string{"top1", "top2", "d1-x", "d1/x", "d1/y", "d1/sub/z", "d2/x", "e/f/g/h"})
	for _, tc := range []struct {
		prefix   string
		objects  []string
		prefixes []string
	}{
		{"", []string{"d1-x", "top1", "top2"}, []string{"d1/", "d2/", "e/"}},
		{"d1/", []string{"d1/x", "d1/y"}, []string{"d1/sub/"}},
		{"d", []string{"d1-x"}, []string{"d1/", "d2/"}},
		{"e/f/", nil, []string{"e/f/g/"}},
		{"top", []string{"top1", "top2"}, nil},
	} {
		for _, limit := range []int{0, 1, 2} {
			what := fmt.Sprintf("delimiter listing of %q with limit %d", tc.prefix, limit)
			l := listChecked(t, e.ctx, e.s, store.ListOptions{Prefix: e.key(tc.prefix), Delimiter: "/", Limit: limit})
			sameStrings(t, what+": objects", l.keys(), e.full(tc.objects...))
			sameStrings(t, what+": common prefixes", l.prefixes, e.full(tc.prefixes...))
		}
	}
}

// Pagination layout: more than 1,000 keys directly under flat/, so even the
// store's default page size must paginate, and a tree/ of directories, so
// delimiter listings paginate over common prefixes.
const (
	flatKeys = 1100
	treeDirs = 67
)

func testPagination(t tb, e *env) {
	var rels, flat, dirs []string
	for i := range flatKeys {
		r := fmt.Sprintf("flat/k%05d", i)
		rels, flat = append(rels, r), append(flat, r)
	}
	for d := range treeDirs {
		dirs = append(dirs, fmt.Sprintf("tree/d%03d/", d))
		rels = append(rels, fmt.Sprintf("tree/d%03d/a", d), fmt.Sprintf("tree/d%03d/b/c", d))
	}
	e.progressf("writing %d keys", len(rels))
	writeAll(t, e, rels)

	pagesFor := func(n, limit int) int { return (n + limit - 1) / limit }
	for _, limit := range []int{0, 1000, 333, 64} {
		e.progressf("listing %d keys, limit %d", flatKeys, limit)
		l := listChecked(t, e.ctx, e.s, store.ListOptions{Prefix: e.key("flat/"), Limit: limit})
		sameStrings(t, fmt.Sprintf("flat listing with limit %d", limit), l.keys(), e.full(flat...))
		eff := limit
		if eff == 0 {
			eff = 1000
		}
		if least := pagesFor(flatKeys, eff); l.pages < least {
			t.Errorf("flat listing with limit %d took %d pages; %d keys need at least %d", limit, l.pages, flatKeys, least)
		}
	}
	// Every key under tree/: objects only, across many pages.
	var tree []string
	for _, r := range rels[flatKeys:] {
		tree = append(tree, e.key(r))
	}
	slices.Sort(tree)
	l := listChecked(t, e.ctx, e.s2, store.ListOptions{Prefix: e.key("tree/"), Limit: 50})
	sameStrings(t, "tree listing with limit 50", l.keys(), tree)

	// Common prefixes page too, one or several at a time.
	for _, limit := range []int{1, 10, 0} {
		l := listChecked(t, e.ctx, e.s, store.ListOptions{Prefix: e.key("tree/"), Delimiter: "/", Limit: limit})
		sameStrings(t, fmt.Sprintf("tree delimiter listing with limit %d: common prefixes", limit), l.prefixes, e.full(dirs...))
		sameStrings(t, fmt.Sprintf("tree delimiter listing with limit %d: objects", limit), l.keys(), nil)
	}
	// And the whole case prefix at the default page size.
	all := append(e.full(flat...), tree...)
	slices.Sort(all)
	l = listChecked(t, e.ctx, e.s2, store.ListOptions{Prefix: e.prefix})
	sameStrings(t, "listing of all keys", l.keys(), all)
}

// listKeys lists every key under prefix with listChecked.
func listKeys(t tb, ctx context.Context, s store.Store, prefix string) []string {
	t.Helper()
	return listChecked(t, ctx, s, store.ListOptions{Prefix: prefix}).keys()
}
