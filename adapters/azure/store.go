// Package azure is CellB's Store on Azure Blob Storage (block blobs): the
// portable store.Bucket over a driver that makes the SDK's calls and maps
// Azure's answers (Classify).
//
// A Version is the blob's ETag. Create-only is If-None-Match: * and
// compare-and-swap is If-Match: <ETag>, sent on Put Blob and, for blobs of
// BlockThreshold bytes or more, on Put Block List: the blocks are staged
// first (invisible until committed) and the condition is checked when the
// commit makes the blob appear. Without the condition on the commit a
// large conditional write would silently become unconditional.
//
// Azure answers If-None-Match: * on an existing blob with 409
// BlobAlreadyExists rather than 412; both are ErrPreconditionFailed. A
// conditional write is sent with the SDK's retries off (a retried
// compare-and-swap can meet its own first attempt); once the write that
// carries it was sent, the Bucket reports any failure other than those
// clean rejections and the refusals of the credentials or the container
// as ErrAmbiguous. A failure while blocks are staged is definite: nothing
// was committed. Azure's ETags are not content hashes, so S3's equal-body
// trap does not apply.
//
// Metadata names are C# identifiers on Azure: '-' is stored as '_' and
// mapped back on reads, as celld does (litestream-timestamp becomes
// litestream_timestamp in the bucket).
//
// Credentials: a shared account key, a connection string, any
// azcore.TokenCredential, or by default azidentity's
// DefaultAzureCredential. The module depends on azidentity for that last
// case only: managed identity, workload identity and the other Microsoft
// Entra ID token flows are what deployments on Azure use instead of keys,
// and they are not reasonable to re-implement.
//
// azblob is held at v1.8.0: v1.8.1 made the container package import
// Apache Arrow (and go-json) for query results CellB never asks for, about
// 50 packages that every cold build of cellb compiled (docs/benchmarks.md,
// "The first build"); the layering test keeps them out.
//
// Failed block uploads leave uncommitted blocks, which Azure discards after
// a week; they are never visible as blob content.
package azure

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/cellb/cellb/core/store"
)

// Store is a store.Store (and Streamer, Copier, DataGetter) on one Azure
// container: the portable Bucket over the container's driver.
type Store struct {
	*store.Bucket
	d *driver
}

// New builds a container client from opts.
func New(ctx context.Context, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var client *container.Client
	switch {
	case opts.ConnectionString != "":
		client, err = container.NewClientFromConnectionString(opts.ConnectionString, opts.Container, opts.ClientOptions)
	case opts.AccountKey != "":
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(opts.Account, opts.AccountKey)
		if err == nil {
			client, err = container.NewClientWithSharedKeyCredential(opts.containerURL(), cred, opts.ClientOptions)
		}
	default:
		cred := opts.Credential
		if cred == nil {
			cred, err = azidentity.NewDefaultAzureCredential(nil)
			if err != nil {
				return nil, fmt.Errorf("azure: default credential chain: %w", err)
			}
		}
		client, err = container.NewClient(opts.containerURL(), cred, opts.ClientOptions)
	}
	if err != nil {
		return nil, fmt.Errorf("azure: creating container client: %w", err)
	}
	return newStore(client, opts), nil
}

// NewFromClient wraps a container client the caller configured. The
// credential and endpoint fields of opts are ignored.
func NewFromClient(client *container.Client, opts Options) (*Store, error) {
	opts.Container = "-" // named by the client
	opts.ServiceURL = client.URL()
	opts.ConnectionString, opts.AccountKey, opts.Credential = "", "", nil
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return newStore(client, opts), nil
}

func newStore(client *container.Client, opts Options) *Store {
	d := &driver{client: client, opts: opts}
	return &Store{Bucket: store.NewBucket(d), d: d}
}

// Client returns the underlying container client.
func (s *Store) Client() *container.Client { return s.d.client }
