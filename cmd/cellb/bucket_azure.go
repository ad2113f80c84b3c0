package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cellb/cellb/adapters/azure"
	"github.com/cellb/cellb/core/store"
)

const azureForm = "az://container[/prefix][?account=NAME&endpoint=URL]"

// openAzureBucket opens an az:// URL (the host part is the container, as
// in celld).
func openAzureBucket(ctx context.Context, loc bucketLocation) (store.Store, error) {
	opts, err := azureOptions(loc, os.Getenv)
	if err != nil {
		return nil, err
	}
	return azure.New(ctx, opts)
}

// azureOptions picks the credentials, in order: AZURE_STORAGE_CONNECTION_STRING;
// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (shared key); otherwise the
// account (?account= or AZURE_STORAGE_ACCOUNT) with azidentity's default
// chain (environment, workload identity, managed identity, Azure CLI). The
// blob endpoint defaults to https://ACCOUNT.blob.core.windows.net/ and is
// overridden by ?endpoint= or CELLB_AZURE_ENDPOINT (Azurite:
// http://127.0.0.1:10000/devstoreaccount1).
func azureOptions(loc bucketLocation, getenv func(string) string) (azure.Options, error) {
	q, err := queryParams(loc, "account", "endpoint")
	if err != nil {
		return azure.Options{}, err
	}
	opts := azure.Options{Container: loc.Bucket}
	endpoint := firstNonEmpty(q["endpoint"], getenv("CELLB_AZURE_ENDPOINT"))
	if cs := getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		if endpoint != "" || q["account"] != "" {
			return azure.Options{}, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING names the account and endpoint itself; drop ?account=, ?endpoint= and CELLB_AZURE_ENDPOINT")
		}
		opts.ConnectionString = cs
		return opts, nil
	}
	opts.Account = firstNonEmpty(q["account"], getenv("AZURE_STORAGE_ACCOUNT"))
	opts.AccountKey = getenv("AZURE_STORAGE_KEY")
	opts.ServiceURL = endpoint
	if opts.Account == "" && opts.ServiceURL == "" {
		return azure.Options{}, fmt.Errorf("no storage account: set AZURE_STORAGE_ACCOUNT (or ?account=), or AZURE_STORAGE_CONNECTION_STRING")
	}
	if opts.AccountKey != "" && opts.Account == "" {
		return azure.Options{}, fmt.Errorf("AZURE_STORAGE_KEY needs AZURE_STORAGE_ACCOUNT")
	}
	return opts, nil
}
