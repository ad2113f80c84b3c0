package store

import "context"

// ListAll follows NextToken until the listing ends and returns every object
// and prefix. Use it for listings known to be small (one cell's LTX files,
// a handful of node leases).
func ListAll(ctx context.Context, s Store, opts ListOptions) (ListPage, error) {
	var all ListPage
	opts.Token = ""
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			return ListPage{}, err
		}
		all.Objects = append(all.Objects, page.Objects...)
		all.Prefixes = append(all.Prefixes, page.Prefixes...)
		if page.NextToken == "" {
			return all, nil
		}
		if page.NextToken == opts.Token {
			return ListPage{}, &OpError{Op: "list", Key: opts.Prefix, Err: errListStuck}
		}
		opts.Token = page.NextToken
	}
}

type listStuck struct{}

func (listStuck) Error() string {
	return "listing did not advance: the store returned the same continuation token twice"
}

var errListStuck error = listStuck{}
