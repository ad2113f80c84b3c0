package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// ErrInvalidToken reports a continuation token List did not issue.
var ErrInvalidToken = errors.New("gcs: invalid continuation token")

// maxListKeys is the largest page GCS returns.
const maxListKeys = 1000

// List implements store.Driver.
//
// The continuation token is the adapter's own, not GCS's page token: it
// names where the next page starts (a startOffset), so List can return
// exactly Limit entries in byte order even when a server's page holds more
// (fake-gcs-server does not count prefixes against maxResults) or lists a
// page's objects before its prefixes. A token is "o" and the last object
// name returned (resume after it) or "s" and an inclusive start (after a
// common prefix: the smallest string above every key under it).
func (d *driver) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	limit := opts.Limit
	if limit <= 0 || limit > maxListKeys {
		limit = maxListKeys
	}
	q := url.Values{
		"prefix":     {opts.Prefix},
		"maxResults": {strconv.Itoa(min(limit+1, maxListKeys))},
		"fields":     {"items(name,size,generation,updated),prefixes,nextPageToken"},
	}
	if opts.Delimiter != "" {
		q.Set("delimiter", opts.Delimiter)
	}
	var skip string // an object name the previous page already returned
	if opts.Token != "" {
		start, after, err := parseToken(opts.Token, opts.Prefix)
		if err != nil {
			return store.ListPage{}, err
		}
		q.Set("startOffset", start)
		skip = after
	}
	// Server pages of limit+1 entries (the extra one tells whether more
	// follow), until more than limit are in hand or the listing ends. Each
	// page covers a contiguous range of the listing, so sorting what was
	// fetched and cutting it keeps the order across calls.
	type entry struct {
		name     string
		isPrefix bool
		obj      *resource
	}
	var entries []entry
	for {
		page, err := d.listPage(ctx, q)
		if err != nil {
			return store.ListPage{}, err
		}
		for _, p := range page.Prefixes {
			entries = append(entries, entry{name: p, isPrefix: true})
		}
		for i := range page.Items {
			if o := &page.Items[i]; o.Name != skip {
				entries = append(entries, entry{name: o.Name, obj: o})
			}
		}
		if page.NextPageToken == "" || len(entries) > limit {
			break
		}
		q.Set("pageToken", page.NextPageToken)
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
		v, err := e.obj.version()
		if err != nil {
			return store.ListPage{}, fmt.Errorf("%w (key %q)", err, e.name)
		}
		size, err := e.obj.size()
		if err != nil {
			return store.ListPage{}, err
		}
		page.Objects = append(page.Objects, store.ObjectInfo{Key: e.name, Size: size, Version: v, Modified: e.obj.modified()})
	}
	return page, nil
}

// listPage is one answer of the objects' listing.
type listPage struct {
	Items         []resource `json:"items"`
	Prefixes      []string   `json:"prefixes"`
	NextPageToken string     `json:"nextPageToken"`
}

func (d *driver) listPage(ctx context.Context, q url.Values) (*listPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.objectsURL(d.api)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	res, err := d.send(opList, req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var page listPage
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		return nil, fmt.Errorf("gcs: decoding a listing: %w", err)
	}
	return &page, nil
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
