package faultstore

import (
	"slices"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// write remembers one write made through the wrapper and what the key held
// before it, so a stale listing can show the older view.
type write struct {
	key    string
	before *store.ObjectInfo // nil: the key was absent, or its state unknown
}

// recordWrite notes a write that the inner store applied; after is nil for
// a delete.
func (s *faults) recordWrite(key string, after *store.ObjectInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var before *store.ObjectInfo
	if info, ok := s.known[key]; ok {
		before = &info
	}
	if after != nil {
		s.known[key] = *after
	} else {
		delete(s.known, key)
	}
	s.recent = append(s.recent, write{key: key, before: before})
	if n := len(s.recent) - s.cfg.StaleWindow; n > 0 {
		s.recent = slices.Delete(s.recent, 0, n)
	}
}

// staleView rewrites a page as it would have looked before the recent
// writes: created keys vanish, replaced keys show their older state, and
// deleted keys come back when they fall inside the page's range (a page
// cannot show keys that belong to its neighbours).
func (s *faults) staleView(page store.ListPage, opts store.ListOptions) store.ListPage {
	s.mu.Lock()
	oldest := make(map[string]*store.ObjectInfo)
	var resurrect []string
	for _, w := range s.recent {
		if _, seen := oldest[w.key]; seen {
			continue
		}
		oldest[w.key] = w.before
		if _, exists := s.known[w.key]; !exists && w.before != nil {
			resurrect = append(resurrect, w.key)
		}
	}
	s.mu.Unlock()

	out := store.ListPage{Prefixes: page.Prefixes, NextToken: page.NextToken}
	for _, o := range page.Objects {
		before, recent := oldest[o.Key]
		switch {
		case !recent:
			out.Objects = append(out.Objects, o)
		case before != nil:
			out.Objects = append(out.Objects, *before)
		}
	}

	entries := slices.Clone(page.Prefixes)
	for _, o := range page.Objects {
		entries = append(entries, o.Key)
	}
	first, last := "", ""
	if len(entries) > 0 {
		first, last = slices.Min(entries), slices.Max(entries)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 1000 // the most any store returns by default
	}
	slices.Sort(resurrect)
	for _, key := range resurrect {
		rest, ok := strings.CutPrefix(key, opts.Prefix)
		switch {
		case !ok:
			continue
		case opts.Delimiter != "" && strings.Contains(rest, opts.Delimiter):
			continue // it would fold into a common prefix
		case opts.Token != "" && (len(entries) == 0 || key < first):
			continue // may belong to an earlier page
		case page.NextToken != "" && (len(entries) == 0 || key > last):
			continue // may belong to a later page
		case len(out.Objects)+len(out.Prefixes) >= limit:
			continue
		}
		out.Objects = append(out.Objects, *oldest[key])
	}
	slices.SortFunc(out.Objects, func(a, b store.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out
}
