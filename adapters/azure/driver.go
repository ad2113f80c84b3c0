package azure

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/cellb/cellb/core/store"
)

// driver is the store.Driver on one container: the SDK's calls, with
// arguments the Bucket has checked, and Classify (classify.go) for what
// Azure's answers mean.
type driver struct {
	client *container.Client
	opts   Options
}

var _ store.Driver = (*driver)(nil)

// Delete deletes the blob; the Bucket takes a missing one for success.
func (d *driver) Delete(ctx context.Context, key string) error {
	_, err := d.client.NewBlobClient(key).Delete(ctx, nil)
	return err
}

// List is one page of List Blobs (flat, or by hierarchy with a
// delimiter); the token is Azure's continuation marker.
func (d *driver) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	var prefix, marker *string
	if opts.Prefix != "" {
		prefix = &opts.Prefix
	}
	if opts.Token != "" {
		marker = &opts.Token
	}
	limit := int32(opts.Limit)
	var (
		items    []*container.BlobItem
		prefixes []*container.BlobPrefix
		next     *string
	)
	if opts.Delimiter == "" {
		resp, err := d.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: prefix, Marker: marker, MaxResults: &limit}).NextPage(ctx)
		if err != nil {
			return store.ListPage{}, err
		}
		items, next = resp.Segment.BlobItems, resp.NextMarker
	} else {
		resp, err := d.client.NewListBlobsHierarchyPager(opts.Delimiter, &container.ListBlobsHierarchyOptions{Prefix: prefix, Marker: marker, MaxResults: &limit}).NextPage(ctx)
		if err != nil {
			return store.ListPage{}, err
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
			info.Version = version(p.ETag)
			info.Size = deref(p.ContentLength)
			info.Modified = deref(p.LastModified)
		}
		if info.Version == "" {
			return store.ListPage{}, fmt.Errorf("%w (key %q)", store.ErrNoVersion, info.Key)
		}
		page.Objects = append(page.Objects, info)
	}
	for _, p := range prefixes {
		if p != nil && p.Name != nil {
			page.Prefixes = append(page.Prefixes, *p.Name)
		}
	}
	page.NextToken = deref(next)
	return page, nil
}

// Close releases nothing: the container client holds no resources of its
// own.
func (d *driver) Close() error { return nil }

// noRetries turns the SDK's retries off for calls made with the result.
func noRetries(ctx context.Context) context.Context {
	return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
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

// version turns an ETag into a Version, always quoted (Azure quotes ETags
// in response headers but not in listings); none gives "", which the
// Bucket reports as store.ErrNoVersion.
func version(etag *azcore.ETag) store.Version {
	if etag == nil {
		return ""
	}
	e := strings.TrimSpace(string(*etag))
	if e == "" {
		return ""
	}
	if !strings.HasPrefix(e, `"`) && !strings.HasPrefix(e, `W/"`) {
		e = `"` + e + `"`
	}
	return store.Version(e)
}

// deref is *p, or the zero value for nil: the SDK answers with pointers.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
