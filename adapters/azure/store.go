// Package azure is CellB's Store on Azure Blob Storage (block blobs).
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
// compare-and-swap can meet its own first attempt) and every failure other
// than those clean rejections is ErrAmbiguous. Azure's ETags are not
// content hashes, so S3's equal-body trap does not apply.
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
// Failed block uploads leave uncommitted blocks, which Azure discards after
// a week; they are never visible as blob content.
package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/cellb/cellb/core/store"
)

// Store is a store.Store on one Azure container.
type Store struct {
	client *container.Client
	opts   Options
}

var _ store.Store = (*Store)(nil)

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
	return &Store{client: client, opts: opts}, nil
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
	return &Store{client: client, opts: opts}, nil
}

// Client returns the underlying container client.
func (s *Store) Client() *container.Client { return s.client }

// noRetries turns the SDK's retries off for calls made with the result.
func noRetries(ctx context.Context) context.Context {
	return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	resp, err := s.client.NewBlobClient(key).DownloadStream(storedBytes(ctx), nil)
	if err != nil {
		return nil, readError("get", key, err)
	}
	defer resp.Body.Close()
	var size int64
	if resp.ContentLength != nil {
		size = max(*resp.ContentLength, 0)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("reading body: %w", err)}
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	obj := &store.Object{
		Key:      key,
		Data:     buf.Bytes(),
		Version:  etagVersion(*resp.ETag),
		Metadata: fromAzureMetadata(resp.Metadata),
		Headers:  headersOf(resp.ContentType, resp.ContentLanguage, resp.ContentDisposition, resp.ContentEncoding, resp.CacheControl),
	}
	if resp.LastModified != nil {
		obj.Modified = *resp.LastModified
	}
	return obj, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if err := store.CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	cond := opts.Condition
	bb := s.client.NewBlockBlobClient(key)
	if int64(len(data)) >= s.opts.BlockThreshold {
		return s.putBlocks(ctx, bb, key, data, opts)
	}
	sum := md5.Sum(data)
	wctx := ctx
	if cond.IsConditional() {
		wctx = noRetries(ctx)
	}
	resp, err := bb.Upload(wctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		Metadata:                toAzureMetadata(opts.Metadata),
		HTTPHeaders:             httpHeaders(opts.Headers),
		AccessConditions:        accessConditions(cond),
		TransactionalContentMD5: sum[:],
	})
	if err != nil {
		return "", writeError(key, cond, err)
	}
	return versionOf(key, resp.ETag)
}

// accessConditions turns cond into Azure's If-None-Match / If-Match.
func accessConditions(cond store.Condition) *blob.AccessConditions {
	var m blob.ModifiedAccessConditions
	switch cond.Kind {
	case store.CreateOnly:
		anyETag := azcore.ETagAny
		m.IfNoneMatch = &anyETag
	case store.MatchVersion:
		etag := azcore.ETag(cond.Version)
		m.IfMatch = &etag
	default:
		return nil
	}
	return &blob.AccessConditions{ModifiedAccessConditions: &m}
}

func versionOf(key string, etag *azcore.ETag) (store.Version, error) {
	if etag == nil || *etag == "" {
		return "", store.Ambiguous("put", key, ErrNoVersion)
	}
	return etagVersion(*etag), nil
}

// etagVersion turns an ETag into a Version, always quoted: Azure quotes
// ETags in response headers but not in listings.
func etagVersion(etag azcore.ETag) store.Version {
	e := strings.TrimSpace(string(etag))
	if !strings.HasPrefix(e, `"`) && !strings.HasPrefix(e, `W/"`) {
		e = `"` + e + `"`
	}
	return store.Version(e)
}

// Delete implements store.Store; a missing key is success.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.NewBlobClient(key).Delete(ctx, nil)
	if err != nil && !isMissingBlob(err) {
		return readError("delete", key, err)
	}
	return nil
}

// maxListKeys is the largest page List returns (Azure allows 5000; the
// Store port promises at most 1000).
const maxListKeys = 1000

// List implements store.Store. The token is Azure's continuation marker.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return store.ListPage{}, err
	}
	limit := opts.Limit
	if limit <= 0 || limit > maxListKeys {
		limit = maxListKeys
	}
	var prefix, marker *string
	if opts.Prefix != "" {
		prefix = &opts.Prefix
	}
	if opts.Token != "" {
		marker = &opts.Token
	}
	maxResults := int32(limit)
	var (
		items    []*container.BlobItem
		prefixes []*container.BlobPrefix
		next     *string
	)
	if opts.Delimiter == "" {
		pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: prefix, Marker: marker, MaxResults: &maxResults})
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return store.ListPage{}, readError("list", opts.Prefix, err)
		}
		items, next = resp.Segment.BlobItems, resp.NextMarker
	} else {
		pager := s.client.NewListBlobsHierarchyPager(opts.Delimiter, &container.ListBlobsHierarchyOptions{Prefix: prefix, Marker: marker, MaxResults: &maxResults})
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return store.ListPage{}, readError("list", opts.Prefix, err)
		}
		items, prefixes, next = resp.Segment.BlobItems, resp.Segment.BlobPrefixes, resp.NextMarker
	}
	var page store.ListPage
	for _, it := range items {
		if it == nil || it.Name == nil {
			continue
		}
		info := store.ObjectInfo{Key: *it.Name}
		if p := it.Properties; p != nil {
			if p.ETag != nil {
				info.Version = etagVersion(*p.ETag)
			}
			if p.ContentLength != nil {
				info.Size = *p.ContentLength
			}
			if p.LastModified != nil {
				info.Modified = *p.LastModified
			}
		}
		if info.Version == "" {
			return store.ListPage{}, &store.OpError{Op: "list", Key: opts.Prefix, Err: fmt.Errorf("%w (key %q)", ErrNoVersion, info.Key)}
		}
		page.Objects = append(page.Objects, info)
	}
	for _, p := range prefixes {
		if p != nil && p.Name != nil {
			page.Prefixes = append(page.Prefixes, *p.Name)
		}
	}
	if next != nil {
		page.NextToken = *next
	}
	return page, nil
}
