package azure

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/cellb/cellb/core/store"
)

// Scheme is the URL scheme of Azure Blob containers, as celld spells it;
// AliasScheme is gocloud's spelling, registered too.
const (
	Scheme      = "az"
	AliasScheme = "azblob"
)

// URLOpener opens az://CONTAINER[/PREFIX] (or azblob://...) URLs; the host
// part is the container, as in celld. Query parameters:
//
//   - account: the storage account; also from AZURE_STORAGE_ACCOUNT, which
//     the query wins over.
//   - endpoint: the blob service URL (default
//     https://ACCOUNT.blob.core.windows.net/; Azurite:
//     http://127.0.0.1:10000/devstoreaccount1); also from
//     CELLB_AZURE_ENDPOINT.
//
// Credentials, in order: AZURE_STORAGE_CONNECTION_STRING (which names the
// account and endpoint itself, so it refuses ?account=, ?endpoint= and
// CELLB_AZURE_ENDPOINT); AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY
// (shared key); otherwise the account with azidentity's default chain
// (environment, workload identity, managed identity, Azure CLI).
type URLOpener struct {
	// Options is the starting point: the URL sets Container, and the
	// account, endpoint and credentials when it or the environment gives
	// them. Block sizes, ClientOptions and Logger are kept.
	Options Options
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Register adds the az and azblob schemes to m, opened by a zero
// URLOpener.
func Register(m *store.URLMux) { URLOpener{}.Register(m) }

// Register adds the az and azblob schemes to m, opened by o.
func (o URLOpener) Register(m *store.URLMux) {
	for _, name := range []string{Scheme, AliasScheme} {
		m.Register(store.URLScheme{Name: name, Form: name + "://container[/prefix][?account=NAME&endpoint=URL]", Params: []string{"account", "endpoint"}, Opener: o})
	}
}

// OpenBucketURL opens the URL's container with New (the mux applies the
// prefix).
func (o URLOpener) OpenBucketURL(ctx context.Context, u *store.BucketURL) (store.Store, error) {
	opts, err := o.URLOptions(u)
	if err != nil {
		return nil, err
	}
	return New(ctx, opts)
}

// URLOptions returns the Options OpenBucketURL would open u with.
func (o URLOpener) URLOptions(u *store.BucketURL) (Options, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := o.Options
	opts.Container = u.Bucket
	endpoint := cmp.Or(u.Query["endpoint"], getenv("CELLB_AZURE_ENDPOINT"))
	if cs := cmp.Or(getenv("AZURE_STORAGE_CONNECTION_STRING"), opts.ConnectionString); cs != "" {
		if endpoint != "" || u.Query["account"] != "" {
			return Options{}, fmt.Errorf("azure: AZURE_STORAGE_CONNECTION_STRING names the account and endpoint itself; drop ?account=, ?endpoint= and CELLB_AZURE_ENDPOINT")
		}
		opts.ConnectionString = cs
		return opts, nil
	}
	opts.Account = cmp.Or(u.Query["account"], getenv("AZURE_STORAGE_ACCOUNT"), opts.Account)
	opts.AccountKey = cmp.Or(getenv("AZURE_STORAGE_KEY"), opts.AccountKey)
	opts.ServiceURL = cmp.Or(endpoint, opts.ServiceURL)
	if opts.Account == "" && opts.ServiceURL == "" {
		return Options{}, fmt.Errorf("azure: no storage account: set AZURE_STORAGE_ACCOUNT (or ?account=), or AZURE_STORAGE_CONNECTION_STRING")
	}
	if opts.AccountKey != "" && opts.Account == "" {
		return Options{}, fmt.Errorf("azure: AZURE_STORAGE_KEY needs AZURE_STORAGE_ACCOUNT")
	}
	return opts, nil
}
