package gcs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/cellb/cellb/core/store"
)

// ErrInvalidToken reports a continuation token List did not issue.
var ErrInvalidToken = errors.New("gcs: invalid continuation token")

// maxListKeys is the largest page GCS returns.
const maxListKeys = 1000

// List implements store.Store.
//
// The continuation token is the adapter's own, not GCS's page token: it
// names where the next page starts (a StartOffset), so List can return
// exactly Limit entries in byte order even when a server's page holds more
// (fake-gcs-server does not count prefixes against maxResults) or lists a
// page's objects before its prefixes. A token is "o" and the last object
// name returned (resume after it) or "s" and an inclusive start (after a
// common prefix: the smallest string above every key under it).
func (s *Store) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return store.ListPage{}, err
	}
	limit := opts.Limit
	if limit <= 0 || limit > maxListKeys {
		limit = maxListKeys
	}
	q := &storage.Query{Prefix: opts.Prefix, Delimiter: opts.Delimiter}
	var skip string // an object name the previous page already returned
	if opts.Token != "" {
		start, after, err := parseToken(opts.Token, opts.Prefix)
		if err != nil {
			return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: err}
		}
		q.StartOffset, skip = start, after
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: err}
	}
	// Server pages of limit+1 entries (the extra one tells whether more
	// follow), until more than limit are in hand or the listing ends. Each
	// page covers a contiguous range of the listing, so sorting what was
	// fetched and cutting it keeps the order across calls.
	type entry struct {
		name     string
		isPrefix bool
		attrs    *storage.ObjectAttrs
	}
	var entries []entry
	pager := iterator.NewPager(s.bucket.Objects(ctx, q), limit+1, "")
	for {
		var attrs []*storage.ObjectAttrs
		next, err := pager.NextPage(&attrs)
		if err != nil {
			return store.ListPage{}, readError("list", opts.Prefix, err)
		}
		for _, a := range attrs {
			switch {
			case a.Prefix != "":
				entries = append(entries, entry{name: a.Prefix, isPrefix: true})
			case a.Name == skip:
			default:
				entries = append(entries, entry{name: a.Name, attrs: a})
			}
		}
		if next == "" || len(entries) > limit {
			break
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var page store.ListPage
	if len(entries) > limit {
		entries = entries[:limit]
		last := entries[limit-1]
		if last.isPrefix {
			page.NextToken = "s" + prefixSuccessor(last.name)
		} else {
			page.NextToken = "o" + last.name
		}
	}
	for _, e := range entries {
		if e.isPrefix {
			page.Prefixes = append(page.Prefixes, e.name)
			continue
		}
		if e.attrs.Generation <= 0 {
			return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: fmt.Errorf("%w (key %q)", ErrNoVersion, e.name)}
		}
		page.Objects = append(page.Objects, store.ObjectInfo{
			Key:      e.name,
			Size:     e.attrs.Size,
			Version:  generationVersion(e.attrs.Generation),
			Modified: e.attrs.Updated,
		})
	}
	return page, nil
}

// parseToken returns the StartOffset a token stands for, and the object
// name to skip at that offset ("" for none).
func parseToken(tok, prefix string) (start, skip string, err error) {
	if tok == "" {
		return "", "", fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	kind, rest := tok[0], tok[1:]
	if !strings.HasPrefix(rest, prefix) || rest == prefix {
		return "", "", fmt.Errorf("%w %q for prefix %q", ErrInvalidToken, tok, prefix)
	}
	switch kind {
	case 'o':
		return rest, rest, nil
	case 's':
		return rest, "", nil
	}
	return "", "", fmt.Errorf("%w %q", ErrInvalidToken, tok)
}

// prefixSuccessor returns the smallest string greater than every string
// that starts with p: p with its last byte below 0xff incremented and the
// bytes after it dropped.
func prefixSuccessor(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "" // unreachable for valid keys, which are UTF-8 (no 0xff byte)
}
