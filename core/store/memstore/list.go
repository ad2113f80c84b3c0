package memstore

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// errBadToken is returned for a continuation token this store did not make.
var errBadToken = errors.New("malformed continuation token")

// List implements store.Driver. Pages follow S3's rules: objects and
// common prefixes are merged in byte order, a common prefix counts as one
// entry, and the continuation token names the last entry returned. The
// Bucket has checked the prefix and set a limit of 1 to 1000.
func (d *driver) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return store.ListPage{}, err
	}
	after, err := decodeToken(opts.Token)
	if err != nil {
		return store.ListPage{}, err
	}
	limit := opts.Limit

	d.mu.RLock()
	defer d.mu.RUnlock()
	start, _ := slices.BinarySearch(d.keys, opts.Prefix)
	if after.entry != "" {
		i, found := slices.BinarySearch(d.keys, after.entry)
		if found {
			i++
		}
		start = max(start, i)
	}

	var page store.ListPage
	var last token
	n := 0
	for _, key := range d.keys[start:] {
		if !strings.HasPrefix(key, opts.Prefix) {
			break
		}
		if after.isPrefix && strings.HasPrefix(key, after.entry) {
			continue // inside the common prefix the previous page ended on
		}
		entry := token{entry: key}
		if opts.Delimiter != "" {
			rest := key[len(opts.Prefix):]
			if j := strings.Index(rest, opts.Delimiter); j >= 0 {
				entry = token{entry: opts.Prefix + rest[:j+len(opts.Delimiter)], isPrefix: true}
				if entry == last {
					continue
				}
			}
		}
		if n == limit {
			page.NextToken = last.encode()
			break
		}
		if entry.isPrefix {
			page.Prefixes = append(page.Prefixes, entry.entry)
		} else {
			o := d.objects[key]
			page.Objects = append(page.Objects, store.ObjectInfo{
				Key:      key,
				Size:     int64(len(o.data)),
				Version:  o.version,
				Modified: o.modified,
			})
		}
		last = entry
		n++
	}
	return page, nil
}

// token is the decoded form of a continuation token: the last entry of the
// previous page, and whether it was a common prefix (then every key under
// it was already accounted for).
type token struct {
	entry    string
	isPrefix bool
}

func (t token) encode() string {
	kind := "k"
	if t.isPrefix {
		kind = "p"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(kind + t.entry))
}

func decodeToken(s string) (token, error) {
	if s == "" {
		return token{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 2 || (raw[0] != 'k' && raw[0] != 'p') {
		return token{}, errBadToken
	}
	return token{entry: string(raw[1:]), isPrefix: raw[0] == 'p'}, nil
}
