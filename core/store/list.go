package store

import (
	"context"
	"errors"
)

// ListEach follows NextToken until the listing ends, handing fn each page
// as it comes, so a listing of any size is held one page at a time. A
// store that returns the same continuation token twice gives an *OpError
// matching ErrListStuck rather than a listing that never ends.
func ListEach(ctx context.Context, s Store, opts ListOptions, fn func(ListPage) error) error {
	opts.Token = ""
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.NextToken == "" {
			return nil
		}
		if page.NextToken == opts.Token {
			return &OpError{Op: "list", Key: opts.Prefix, Err: ErrListStuck}
		}
		opts.Token = page.NextToken
	}
}

// ListAll follows NextToken until the listing ends and returns every object
// and prefix. Use it for listings known to be small (one cell's LTX files,
// a handful of node leases); ListEach for any other.
func ListAll(ctx context.Context, s Store, opts ListOptions) (ListPage, error) {
	var all ListPage
	err := ListEach(ctx, s, opts, func(page ListPage) error {
		all.Objects = append(all.Objects, page.Objects...)
		all.Prefixes = append(all.Prefixes, page.Prefixes...)
		return nil
	})
	if err != nil {
		return ListPage{}, err
	}
	return all, nil
}

// ErrListStuck: a listing returned the same continuation token twice.
var ErrListStuck = errors.New("listing did not advance: the store returned the same continuation token twice")
